"""pygomp's built-in device plugins (installed as ``pygomp.plugins``)."""
