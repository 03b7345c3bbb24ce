"""OpenACC's runtime routines (being split by job)."""
from .devices import *  # noqa: F401,F403
from .devices import _devices_of  # noqa: F401
