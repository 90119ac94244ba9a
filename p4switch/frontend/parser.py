"""Hand-written recursive-descent parser for P4-16, producing `ast` nodes.

Like p4c, it keeps a table of the type names declared so far (plus the type parameters in
scope) to tell types from values, which resolves the `<` ambiguity: `f<bit<8>>(x)` is a
generic call when what follows `<` starts a type, `a < b` a comparison otherwise; and
`(T) e` is a cast when `T` is a type.

Operator precedence, lowest to highest (P4-16 spec): `?:`, `||`, `&&`, `== !=`,
`< > <= >=`, `|`, `^`, `&`, `<< >>`, `++ + - |+| |-|`, `* / %`, prefix operators and casts,
then postfix `. [] ()`. `&&&` and `..` only appear in keysets, below all of them.
"""


from . import ast as A
from .errors import CompileError
from .lexer import CONTEXTUAL_KEYWORDS, Token, tokenize
from .parse_declarations import DeclarationParser
from .parse_expressions import ExpressionParser
from .parse_statements import StatementParser
from .parser_core import BASE_TYPE_KEYWORDS, _Backtrack, describe


class Parser(DeclarationParser, StatementParser, ExpressionParser):
    """Parses one token list. Use `parse_program(text, filename)`."""

    def __init__(self, tokens: list[Token], text: str):
        self.toks = tokens
        self.text = text
        self.i = 0
        self.type_names: set[str] = set()
        self.type_scopes: list[set[str]] = []
        self.speculating = 0

    # -- token helpers -------------------------------------------------------------------------

    def peek(self, k: int = 0) -> Token:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else self.toks[-1]

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def advance(self) -> Token:
        t = self.toks[self.i]
        if t.kind != "EOF":
            self.i += 1
        return t

    def at(self, kind: str) -> bool:
        return self.toks[self.i].kind == kind

    def accept(self, kind: str):
        if self.toks[self.i].kind == kind:
            return self.advance()
        return None

    def expect(self, kind: str, what: str = None) -> Token:
        t = self.toks[self.i]
        if t.kind != kind:
            self.fail(t, f"expected {what or repr(kind)}, found {describe(t)}")
        self.i += 1
        return t

    def fail(self, tok: Token, message: str):
        if self.speculating:
            raise _Backtrack()
        raise CompileError(tok.loc, f"syntax error: {message}")

    def name(self, what: str = "a name") -> Token:
        """An identifier (contextual keywords such as `apply` or `key` allowed)."""
        t = self.tok
        if t.kind == "ID" or t.kind in CONTEXTUAL_KEYWORDS:
            self.i += 1
            return t
        self.fail(t, f"expected {what}, found {describe(t)}")

    def at_name(self, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind == "ID" or t.kind in CONTEXTUAL_KEYWORDS

    def speculate(self, fn):
        """Run fn(); on mismatch restore the position and return None."""
        saved = self.i
        self.speculating += 1
        try:
            return fn()
        except (_Backtrack, CompileError):
            self.i = saved
            return None
        finally:
            self.speculating -= 1

    # -- type-name table -----------------------------------------------------------------------

    def is_type_name(self, name: str) -> bool:
        if name in self.type_names:
            return True
        return any(name in s for s in self.type_scopes)

    def declare_type(self, name: str):
        self.type_names.add(name)

    def starts_type(self, k: int = 0) -> bool:
        t = self.peek(k)
        if t.kind in BASE_TYPE_KEYWORDS:
            return True
        if t.kind == "ID":
            return self.is_type_name(t.value)
        if t.kind == "." and self.peek(k + 1).kind == "ID":
            return self.is_type_name(self.peek(k + 1).value)
        return False

    # -- program -------------------------------------------------------------------------------

    def parse_program(self) -> A.Program:
        decls = []
        start = self.tok.loc
        while not self.at("EOF"):
            if self.accept(";"):
                continue
            decls.append(self.top_declaration())
        return A.Program(loc=start, declarations=decls, end_loc=self.tok.loc)

    def top_declaration(self):
        anns = self.annotations()
        k = self.tok.kind
        if k in ("error", "match_kind") and self.peek(1).kind == "{":
            return self.member_list_decl(anns)
        method = self._TOP_DECLARATIONS.get(k, "instantiation_or_function")
        return getattr(self, method)(anns)

    # The method that parses a top-level declaration, by its first token (other tokens
    # start an instantiation or a function).
    _TOP_DECLARATIONS = {
        "const": "constant_decl", "extern": "extern_decl", "action": "action_decl",
        "parser": "parser_decl", "control": "control_decl", "package": "package_decl",
        "header": "struct_like_decl", "header_union": "struct_like_decl",
        "struct": "struct_like_decl", "enum": "enum_decl", "typedef": "typedef_decl",
        "type": "typedef_decl", "value_set": "value_set_decl"}

    # -- annotations ---------------------------------------------------------------------------

    def annotations(self) -> list[A.Annotation]:
        anns = []
        while self.at("@"):
            at = self.advance()
            name_tok = self.tok
            if name_tok.kind == "ID" or name_tok.kind in self._ANNOTATION_NAME_KINDS:
                self.advance()
            else:
                self.fail(name_tok, f"expected an annotation name, found {describe(name_tok)}")
            ann = A.Annotation(loc=at.loc, name=name_tok.value)
            if self.at("("):
                self.annotation_body(ann)
            elif self.at("["):
                self.annotation_body(ann)
            anns.append(ann)
        return anns

    _ANNOTATION_NAME_KINDS = frozenset(["type", "const", "priority", "key", "entries", "state",
                                        "apply", "list", "error", "match_kind"])

    def annotation_body(self, ann: A.Annotation):
        """The bracketed body of an annotation: kept as raw text, and parsed as `key = value`
        pairs (structured `[...]` form) or as an expression list when it is one."""
        open_tok = self.advance()
        body_start = self.i
        depth = 1
        while depth:
            t = self.tok
            if t.kind == "EOF":
                self.fail(open_tok, f"unterminated annotation @{ann.name}")
            if t.kind in ("(", "[", "{"):
                depth += 1
            elif t.kind in (")", "]", "}"):
                depth -= 1
            self.advance()
        body_end = self.i - 1  # index of the closing bracket
        close = self.toks[body_end]
        ann.raw = self.text[open_tok.end:close.start].strip()
        if body_end == body_start:
            return
        saved = self.i
        self.i = body_start
        if open_tok.kind == "[":
            kv = self.speculate(lambda: self.annotation_kv(body_end))
            if kv is not None:
                ann.kv = kv
        if ann.kv is None:
            args = self.speculate(lambda: self.annotation_args(body_end))
            if args is not None:
                ann.args = args
        self.i = saved

    def annotation_kv(self, end: int) -> dict:
        kv = {}
        while self.i < end:
            key = self.name("a key")
            self.expect("=")
            kv[key.value] = self.expression()
            if self.i < end:
                self.expect(",")
        if self.i != end:
            raise _Backtrack()
        return kv

    def annotation_args(self, end: int) -> list:
        args = []
        while self.i < end:
            args.append(self.expression())
            if self.i < end:
                self.expect(",")
        if self.i != end:
            raise _Backtrack()
        return args

    # -- types ---------------------------------------------------------------------------------

    def type_ref(self) -> A.TypeRef:
        t = self.tok
        k = t.kind
        if k in ("bit", "int", "varbit"):
            self.advance()
            width = None
            if self.at("<"):
                self.advance()
                width = self.width_expression()
                self.expect(">")
            elif k == "varbit":
                self.fail(self.tok, "varbit needs a width: varbit<W>")
            elif k == "bit":
                width = A.IntLiteral(loc=t.loc, value=1, text="1")
            ref = A.BaseTypeRef(loc=t.loc, name=k, width=width)
        elif k in ("bool", "string", "void", "error", "match_kind"):
            self.advance()
            ref = A.BaseTypeRef(loc=t.loc, name=k)
        elif k in ("tuple", "list"):
            self.advance()
            self.expect("<")
            elems = self.type_arg_list()
            self.expect(">")
            ref = A.TupleTypeRef(loc=t.loc, elements=elems, is_list=k == "list")
        elif k == "ID" and t.value == "_":
            self.advance()
            ref = A.DontCareTypeRef(loc=t.loc)
        elif k == "ID" or k == ".":
            is_global = bool(self.accept("."))
            name_tok = self.expect("ID", "a type name") if is_global else self.advance()
            args = []
            if self.at("<"):
                self.advance()
                args = self.type_arg_list()
                self.expect(">")
            ref = A.NamedTypeRef(loc=t.loc, name=name_tok.value, type_args=args, is_global=is_global)
        else:
            self.fail(t, f"expected a type, found {describe(t)}")
        while self.at("["):
            # header stack: T[size]
            self.advance()
            size = self.expression()
            self.expect("]")
            ref = A.HeaderStackTypeRef(loc=t.loc, element=ref, size=size)
        return ref

    def width_expression(self) -> A.Expression:
        t = self.tok
        if t.kind == "INT":
            self.advance()
            return self.int_literal(t)
        if t.kind == "(":
            self.advance()
            e = self.expression()
            self.expect(")")
            return e
        if t.kind == "ID":
            self.advance()
            return A.PathExpression(loc=t.loc, name=t.value)
        self.fail(t, f"expected a width, found {describe(t)}")

    def type_arg_list(self) -> list[A.TypeRef]:
        args = [self.type_ref()]
        while self.accept(","):
            args.append(self.type_ref())
        return args

    def type_params(self) -> list[A.TypeParameter]:
        params = []
        if self.accept("<"):
            while True:
                t = self.name("a type parameter")
                params.append(A.TypeParameter(loc=t.loc, name=t.value))
                if not self.accept(","):
                    break
            self.expect(">")
        return params

    def push_type_params(self, params):
        self.type_scopes.append({p.name for p in params})

    def pop_type_params(self):
        self.type_scopes.pop()

    # -- parameters and arguments --------------------------------------------------------------

    def parenthesized(self, item) -> list:
        """`( item, item, ... )`, possibly empty: the results of calling `item` for each."""
        self.expect("(")
        items = []
        if not self.at(")"):
            while True:
                items.append(item())
                if not self.accept(","):
                    break
        self.expect(")")
        return items

    def parameters(self) -> list[A.Parameter]:
        return self.parenthesized(self.parameter)

    def parameter(self) -> A.Parameter:
        anns = self.annotations()
        start = self.tok
        direction = None
        if self.tok.kind in ("in", "out", "inout"):
            direction = self.advance().kind
        ref = self.type_ref()
        name = self.name("a parameter name")
        default = None
        if self.accept("="):
            default = self.expression()
        return A.Parameter(loc=start.loc, name=name.value, annotations=anns, direction=direction,
                           type_ref=ref, default=default,
                           optional=A.find_annotation(anns, "optional") is not None)

    def arguments(self) -> list[A.Argument]:
        return self.parenthesized(self.argument)

    def argument(self) -> A.Argument:
        t = self.tok
        if self.at_name() and self.peek(1).kind == "=":
            self.advance()
            self.advance()
            return A.Argument(loc=t.loc, name=t.value, value=self.expression())
        return A.Argument(loc=t.loc, value=self.expression())

    # -- declarations --------------------------------------------------------------------------


def parse_program(text: str, filename: str) -> A.Program:
    """Tokenize and parse preprocessed `text`; raises CompileError on a syntax error."""
    parser = Parser(tokenize(text, filename), text)
    return parser.parse_program()
