# Engram's Python tool harness. Run as: python3 -I -B -X utf8 harness.py RESULT_PATH, inside
# the sandbox, with the sandbox's bridge code (engram_bridge_start) placed before this file.
# Reads one JSON request on stdin and writes one JSON result to RESULT_PATH, so nothing the
# tool prints can corrupt it. Requests:
#   {"mode": "schema", "source": str, "name": str | null}
#   {"mode": "run", "source": str, "name": str, "arguments": {...},
#    "agent": {"id": str, "name": str},
#    "blocks": [{"label": str, "value": str, "limit": int, "read_only": bool}]}
# Results: {"ok": ...} or {"error": "ExceptionType: message"}.
import ast
import json
import sys
import traceback

RESULT_PATH = sys.argv[1]


def write_result(obj):
    with open(RESULT_PATH, "w", encoding="utf-8") as f:
        json.dump(obj, f)


def error_line(exc):
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


# ---------------------------------------------------------------- schema (ast only, no exec)

SIMPLE_TYPES = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "list": "array",
    "List": "array",
    "tuple": "array",
    "Tuple": "array",
    "set": "array",
    "Set": "array",
    "Sequence": "array",
    "dict": "object",
    "Dict": "object",
    "Mapping": "object",
}


def _name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):  # typing.List, t.Optional
        return node.attr
    return None


def _is_none(node):
    return isinstance(node, ast.Constant) and node.value is None or _name(node) == "None"


def annotation_schema(node):
    """Returns (schema, optional) for an annotation node."""
    if node is None:
        return {}, False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return {}, False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | None
        parts = []

        def flatten(n):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr):
                flatten(n.left)
                flatten(n.right)
            else:
                parts.append(n)

        flatten(node)
        return _union(parts)
    if isinstance(node, ast.Subscript):
        outer = _name(node.value)
        inner = node.slice
        if hasattr(ast, "Index") and isinstance(inner, getattr(ast, "Index")):  # Python < 3.9
            inner = inner.value
        args = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
        if outer == "Optional":
            schema, _ = annotation_schema(args[0])
            return schema, True
        if outer == "Union":
            return _union(args)
        if outer == "Literal":
            values = [a.value for a in args if isinstance(a, ast.Constant)]
            schema = {"enum": values}
            kinds = {type(v) for v in values}
            if len(kinds) == 1:
                t = SIMPLE_TYPES.get(kinds.pop().__name__)
                if t:
                    schema = {"type": t, "enum": values}
            return schema, False
        if outer == "Annotated":
            return annotation_schema(args[0])
        kind = SIMPLE_TYPES.get(outer)
        if kind == "array":
            schema = {"type": "array"}
            if outer in ("list", "List", "set", "Set", "Sequence") and args:
                items, _ = annotation_schema(args[0])
                if items:
                    schema["items"] = items
            return schema, False
        if kind:
            return {"type": kind}, False
        return {}, False
    if _is_none(node):
        return {}, True
    kind = SIMPLE_TYPES.get(_name(node))
    return ({"type": kind} if kind else {}), False


def _union(parts):
    optional = any(_is_none(p) for p in parts)
    rest = [p for p in parts if not _is_none(p)]
    if len(rest) == 1:
        schema, _ = annotation_schema(rest[0])
        return schema, optional
    schemas = [annotation_schema(p)[0] for p in rest]
    if all(schemas) and all(list(s) == ["type"] for s in schemas):
        return {"type": [s["type"] for s in schemas]}, optional
    return {}, optional


SECTION_NAMES = {
    "args", "arguments", "parameters", "params", "returns", "return", "yields", "raises",
    "example", "examples", "note", "notes", "attributes", "see also", "warning", "warnings",
    "todo", "references",
}


def parse_docstring(doc):
    """Google style: (description, {param: description})."""
    if not doc:
        return "", {}
    lines = doc.expandtabs().splitlines()
    description = []
    params = {}
    section = None
    current = None
    section_indent = 0
    for raw in lines:
        stripped = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        if stripped.endswith(":") and stripped[:-1].strip().lower() in SECTION_NAMES:
            section = stripped[:-1].strip().lower()
            section_indent = indent
            current = None
            continue
        if section is None:
            description.append(stripped)
            continue
        if section not in ("args", "arguments", "parameters", "params"):
            continue
        if not stripped:
            continue
        if indent <= section_indent:
            # Text back at the section header's level ends the section.
            section = "other"
            continue
        head, sep, rest = stripped.partition(":")
        pname = head.split("(")[0].strip().lstrip("*")
        if sep and pname.isidentifier() and (current is None or indent <= current[1]):
            current = (pname, indent)
            params[pname] = rest.strip()
        elif current is not None:
            params[current[0]] = (params[current[0]] + " " + stripped).strip()
    # First paragraphs up to the first section, joined into one line each.
    text = "\n".join(description).strip()
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
    return "\n\n".join(paragraphs), params


def find_function(tree, name):
    funcs = [
        n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    if name is not None:
        matches = [f for f in funcs if f.name == name]
        if not matches:
            raise LookupError("No function named '%s' in the tool's source." % name)
        return matches[-1]
    public = [f for f in funcs if not f.name.startswith("_")]
    if len(public) == 1:
        return public[0]
    if not public:
        raise LookupError("The tool's source defines no function.")
    raise LookupError(
        "The tool's source defines several functions (%s); say which one is the tool."
        % ", ".join(f.name for f in public)
    )


def schema(req):
    tree = ast.parse(req["source"], filename="<tool>")
    fn = find_function(tree, req.get("name"))
    description, param_docs = parse_docstring(ast.get_docstring(fn))
    args = fn.args
    positional = list(getattr(args, "posonlyargs", [])) + list(args.args)
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
    properties = {}
    required = []
    for arg, default in pairs:
        if arg.arg in ("agent_state", "self"):
            continue
        prop, optional = annotation_schema(arg.annotation)
        prop = dict(prop)
        if param_docs.get(arg.arg):
            prop["description"] = param_docs[arg.arg]
        if default is not None:
            # A literal default (`sides: int = 6`) is part of the contract: models and the
            # window's "Try it" start from it. Anything computed is left out.
            try:
                value = ast.literal_eval(default)
                json.dumps(value)
            except (ValueError, TypeError, SyntaxError):
                pass
            else:
                if value is not None:
                    prop["default"] = value
        properties[arg.arg] = prop
        if default is None and not optional:
            required.append(arg.arg)
    return {
        "name": fn.name,
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required},
    }


# ---------------------------------------------------------------- run


class Block(object):
    """A read-only view of a core-memory block; change it with memory.update_block_value."""

    __slots__ = ("_label", "_value", "_limit", "_read_only")

    def __init__(self, label, value, limit, read_only):
        object.__setattr__(self, "_label", label)
        object.__setattr__(self, "_value", value)
        object.__setattr__(self, "_limit", limit)
        object.__setattr__(self, "_read_only", read_only)

    label = property(lambda self: self._label)
    value = property(lambda self: self._value)
    limit = property(lambda self: self._limit)
    read_only = property(lambda self: self._read_only)

    def __setattr__(self, key, value):
        raise AttributeError(
            "Blocks are read-only views; use agent_state.memory.update_block_value(label, value)"
        )

    def __repr__(self):
        return "Block(label=%r, limit=%r, value=%r)" % (self._label, self._limit, self._value)


class Memory(object):
    def __init__(self, blocks):
        self._blocks = {}
        for b in blocks:
            self._blocks[b["label"]] = Block(b["label"], b["value"], b["limit"], b["read_only"])
        self._updates = {}  # label -> new value; dict keeps first-update order

    def list_block_labels(self):
        return list(self._blocks)

    def get_block(self, label):
        if label not in self._blocks:
            raise KeyError(
                "No memory block labelled %r (this agent has: %s)"
                % (label, ", ".join(self._blocks) or "no blocks")
            )
        return self._blocks[label]

    def update_block_value(self, label, value):
        block = self.get_block(label)
        if not isinstance(value, str):
            raise ValueError("A block value must be a str, not %s" % type(value).__name__)
        if block.read_only:
            raise ValueError("Memory block %r is read-only and cannot be changed" % label)
        if len(value) > block.limit:
            raise ValueError(
                "Edit failed: the new value of block %r is %d characters, over its limit of %d"
                % (label, len(value), block.limit)
            )
        self._blocks[label] = Block(label, value, block.limit, block.read_only)
        self._updates[label] = value


class AgentState(object):
    def __init__(self, agent, blocks):
        self.id = agent["id"]
        self.name = agent["name"]
        self.memory = Memory(blocks)


def encode_return(value):
    if isinstance(value, str):
        return value
    if value is None:
        return "None"
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def run(req):
    import __future__
    import inspect
    import typing

    # Engram's local API on 127.0.0.1, when the sandbox bound its socket (before any tool code).
    if "engram_bridge_start" in globals():
        engram_bridge_start()

    namespace = {"__name__": "__engram_tool__", "__builtins__": __builtins__}
    # Letta's sandbox sees typing's names; annotations stay unevaluated strings.
    for n in ("Any", "Dict", "List", "Optional", "Tuple", "Union", "Literal", "Set"):
        if hasattr(typing, n):
            namespace[n] = getattr(typing, n)
    code = compile(
        req["source"], "<tool>", "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True
    )
    exec(code, namespace)
    fn = namespace.get(req["name"])
    if not callable(fn):
        raise LookupError("No function named '%s' in the tool's source." % req["name"])
    arguments = req.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise TypeError("The tool's arguments must be a JSON object")
    state = AgentState(req["agent"], req["blocks"])
    kwargs = dict(arguments)
    if "agent_state" in inspect.signature(fn).parameters:
        kwargs["agent_state"] = state
    result = fn(**kwargs)
    if inspect.isawaitable(result):
        import asyncio

        result = asyncio.run(result)
    return {
        "return": encode_return(result),
        "updates": [[k, v] for k, v in state.memory._updates.items()],
    }


def main():
    try:
        req = json.loads(sys.stdin.read())
        out = schema(req) if req.get("mode") == "schema" else run(req)
        result = {"ok": out}
    except BaseException as exc:  # the tool's SystemExit and KeyboardInterrupt too
        result = {"error": error_line(exc)}
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    write_result(result)


main()
