"""What `@omp.target` checks when it runs, before any argument type is known: the
constructs the front end refuses, the text of ``reduction=``, a ``break`` directly in a
parallel loop.  Each error is the one the first call would raise (the front end raises
it from here too), with the file, line and source line.  A single pass over the
kernel's AST, importing only `lang`; what needs types or names waits for the first
call."""
from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import re
import textwrap

from ..errors import CompileError
from .callables import LOOPS

# the node kinds of `frontend.SUPPORTED` (the front end checks that they are its keys)
KINDS = frozenset((
    ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.If, ast.For, ast.While,
    ast.Break, ast.Continue, ast.Return, ast.Pass, ast.FunctionDef, ast.Constant, ast.Name,
    ast.Attribute, ast.Subscript, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Call))

# expression kinds refused wherever they stand (not in a keyword, where the front end
# asks for a constant instead), and text that may hold one: expressions are walked only
# then (or when the code holds nested code), which keeps a decoration cheap
_REFUSED = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
            ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr, ast.JoinedStr)
_MAYBE = re.compile(r"lambda|yield|await|:=|[\[{(][^\n]*\bfor\b"
                    r"|\b[rRbBuU]?[fF][rRbB]?['\"]")

REDUCTION_OPS = ("+", "*", "max", "min", "&", "|", "^", "and", "or")

BREAK = "break directly in a parallel loop is not allowed: it has no order to stop"
NESTED = ("a nested function takes plain parameters (no defaults, *args or **kwargs) "
          "and no decorators")
LAMBDA = "a lambda must be bound to a name (f = lambda v: ...) and called by it"
PARAMS = ("kernel parameters must be plain names, with defaults or not (no *args, "
          "**kwargs or keyword-only ones)")


def source(fn):
    """(file, source lines, line offset, the FunctionDef) of ``fn``."""
    try:
        lines, start = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError) as e:
        where = fn.__code__.co_filename
        if where.startswith("<"):
            raise CompileError(
                f"cannot compile {fn.__qualname__}: it is defined in {where}, and Python "
                f"keeps no source of code run by python -c, from standard input or by "
                f"exec; define kernels in a file, a notebook or IPython") from None
        raise CompileError(f"cannot read the source of {fn.__qualname__}: {e}") from None
    node = ast.parse(textwrap.dedent("".join(lines))).body[0]
    if not isinstance(node, ast.FunctionDef):
        raise CompileError(f"{fn.__qualname__} is not a def function", file, start)
    return file, lines, start - 1, node


def error(file, lines, offset, node, message):
    """A CompileError at ``node``'s line, with its source line."""
    ln = getattr(node, "lineno", 1) + offset
    k = ln - offset - 1
    return CompileError(message, file, ln, lines[k] if 0 <= k < len(lines) else "")


def refusal(node) -> str:
    """The error of a construct kernels do not support."""
    if isinstance(node, ast.Lambda):
        return LAMBDA
    return f"{_describe(node)} is not supported in kernels"


def refused_in(node):
    """The first construct under ``node`` that no kernel expression may hold, or None."""
    return next((n for n in ast.walk(node) if isinstance(n, _REFUSED)), None)


def reduction(spec):
    """[(operator, names text)] of a ``reduction=`` string; ValueError with the message
    of a bad one."""
    out, op = [], None
    items = [x.strip() for x in spec.replace(";", ",").split(",")]
    if inscan(spec):
        items = items[1:]
    for item in filter(None, items):
        if item == "inscan" or item.startswith("inscan:"):
            raise ValueError(f"bad reduction={spec!r}: the inscan modifier comes first, "
                             f"once, and applies to every variable (\"inscan,+:s\")")
        if ":" in item:                  # "op:name" starts a group; "name" goes on one
            op, _, item = (x.strip() for x in item.partition(":"))
            if op not in REDUCTION_OPS:
                raise ValueError(f"bad reduction '{op}:{item}': {op!r} is not a reduction "
                                 f"operator; the operators allowed are "
                                 f"{' '.join(REDUCTION_OPS)}")
        if op is None or not item:
            raise ValueError(f"bad reduction={spec!r}: write OP:VAR[,VAR] groups, e.g. "
                             f"\"+:s,max:m\" (, or ; between them)")
        out.append((op, item))
    if not out and inscan(spec):
        raise ValueError(f"bad reduction={spec!r}: write OP:VAR[,VAR] groups, e.g. "
                         f"\"+:s,max:m\" (, or ; between them)")
    return out


def inscan(spec) -> bool:
    """Whether a ``reduction=`` string starts with OpenMP's inscan modifier (a scan:
    ``"inscan,+:s"``)."""
    return isinstance(spec, str) and spec.replace(";", ",").split(",")[0].strip() == "inscan"


def check(fn) -> None:
    """Raise the first error of ``fn``'s kernel that needs no types, or that its source
    cannot be read."""
    try:
        where = _quick_source(fn) or source(fn)
    except SyntaxError:
        return
    _Check(fn, *where).run()


def _quick_source(fn):
    """`source` without `inspect`'s tokenizing, which costs more than the check: the
    lines from the line cache up to the last line of the code's positions; None when
    that does not give a def."""
    code = fn.__code__
    try:
        file = inspect.getsourcefile(fn)
        text = linecache.getlines(file, fn.__globals__)
        first, last = code.co_firstlineno, _last_line(code)
        lines = text[first - 1:last]
        if lines[0][:1] in (" ", "\t"):        # an indented def: parsed under an "if"
            lines.insert(0, "if 1:\n")
            node = ast.parse("".join(lines)).body[0].body[0]
        else:
            node = ast.parse("".join(lines)).body[0]
        first -= len(lines) - (last - first + 1)
    except Exception:
        return None
    return (file, lines, first - 1, node) if isinstance(node, ast.FunctionDef) else None


def _last_line(code):
    last = max((p[1] for p in code.co_positions() if p[1]), default=code.co_firstlineno)
    for c in code.co_consts:
        if hasattr(c, "co_positions"):
            last = max(last, _last_line(c))
    return last


class _Check:
    def __init__(self, fn, file, lines, offset, node):
        self.fn, self.where, self.node = fn, (file, lines, offset), node
        code = fn.__code__
        self.local = code.co_varnames + code.co_cellvars      # not resolved here
        self.walk = any(hasattr(c, "co_code") for c in code.co_consts) \
            or _MAYBE.search("".join(lines)) is not None

    def error(self, node, message):
        return error(*self.where, node, message)

    def run(self):
        a = self.node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise self.error(self.node, PARAMS)
        self.block(self.node.body, None)

    def block(self, stmts, loop):
        """``loop``: the nearest enclosing loop, "par" or "seq" (None: none)."""
        for s in stmts:
            if type(s) not in KINDS:
                raise self.error(s, refusal(s))
            if isinstance(s, ast.Expr) and not isinstance(s.value, ast.Call) \
                    and not _docstring(s):
                self.exprs(s.value)
                raise self.error(s, "an expression statement must be a call")
            if isinstance(s, ast.Break) and loop != "seq":
                raise self.error(s, BREAK)
            if isinstance(s, ast.FunctionDef):
                if not plain(s):
                    raise self.error(s, NESTED)
                self.block(s.body, None)
            elif _is_lambda_def(s):
                self.exprs(s.value.body)
                if not plain(s.value):
                    raise self.error(s, NESTED)
            elif isinstance(s, ast.For):
                self.exprs(s.target)
                par = self.is_par_loop(s)
                if par:
                    self.clauses(s)
                else:
                    self.exprs(s.iter)
                self.block(s.body, "par" if par else "seq")
                self.block(s.orelse, loop)
            elif isinstance(s, ast.While):
                self.exprs(s.test)
                self.block(s.body, "seq")
                self.block(s.orelse, loop)
            elif isinstance(s, ast.If):
                self.exprs(s.test)
                self.block(s.body, loop)
                self.block(s.orelse, loop)
            else:
                self.exprs(s)

    def exprs(self, node):
        """Refuse the constructs no kernel expression may hold (not in what the front
        end looks up instead of compiling: a callee, keywords, an indexed array, the
        base of an attribute)."""
        todo = [node] if self.walk else []
        while todo:
            n = todo.pop()
            if isinstance(n, _REFUSED):
                raise self.error(n, refusal(n))
            if isinstance(n, ast.Call):     # a callee is looked up, not compiled
                todo += n.args + [n.func] * isinstance(n.func, ast.Lambda)
            elif isinstance(n, ast.Subscript):  # so is the array indexed
                todo.append(n.slice)
            elif not isinstance(n, ast.Attribute):
                todo += ast.iter_child_nodes(n)

    def is_par_loop(self, s):
        return isinstance(s.iter, ast.Call) and _in(self.static(s.iter.func), LOOPS)

    def clauses(self, s):
        for a in s.iter.args:
            self.exprs(a)
        for k in s.iter.keywords:
            if k.arg == "reduction" and isinstance(k.value, ast.Constant) \
                    and isinstance(k.value.value, str):
                try:
                    reduction(k.value.value)
                except ValueError as e:
                    raise self.error(s, str(e)) from None

    def static(self, node):
        """The object a name or attribute chain stands for now, else None."""
        if isinstance(node, ast.Attribute):
            base = self.static(node.value)
            return None if base is None else getattr(base, node.attr, None)
        if not isinstance(node, ast.Name) or node.id in self.local:
            return None
        fn = self.fn
        if node.id in fn.__code__.co_freevars and fn.__closure__:
            cell = fn.__closure__[fn.__code__.co_freevars.index(node.id)]
            try:
                return cell.cell_contents
            except ValueError:
                return None
        if node.id in fn.__globals__:
            return fn.__globals__[node.id]
        return getattr(builtins, node.id, None)


def plain(fn) -> bool:
    """Whether a nested def or lambda takes plain parameters only, undecorated."""
    a = fn.args
    return not (a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults
                or getattr(fn, "decorator_list", None))


def _is_lambda_def(s):
    """``name = lambda ...``, the one place a lambda stands."""
    return isinstance(s, ast.Assign) and isinstance(s.value, ast.Lambda) \
        and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)


def _docstring(s):
    return isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)


def _in(obj, table):
    try:
        return obj in table
    except TypeError:
        return False


def _describe(node):
    """How a refused construct is named in its error."""
    names = {"ListComp": "a list comprehension", "Lambda": "a lambda", "With": "with",
             "Try": "try", "Raise": "raise", "Global": "global", "Nonlocal": "nonlocal",
             "FunctionDef": "a nested def", "ClassDef": "a class", "Import": "import",
             "ImportFrom": "import", "Yield": "yield", "Await": "await", "Assert": "assert",
             "Delete": "del", "List": "a list", "Dict": "a dict", "Set": "a set",
             "JoinedStr": "an f-string", "Starred": "*unpacking", "GeneratorExp":
             "a generator expression", "DictComp": "a dict comprehension", "Tuple": "a tuple",
             "AsyncFunctionDef": "async def", "Match": "match", "NamedExpr": ":="}
    n = type(node).__name__
    return names.get(n, f"{n} ({ast.unparse(node)[:40]})" if hasattr(ast, "unparse") else n)
