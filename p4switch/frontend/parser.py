"""Hand-written recursive-descent parser for P4-16, producing `ast` nodes.

Like p4c, it keeps a table of the type names declared so far (plus the type parameters in
scope) to tell types from values, which resolves the `<` ambiguity: `f<bit<8>>(x)` is a
generic call when what follows `<` starts a type, `a < b` a comparison otherwise; and
`(T) e` is a cast when `T` is a type.

Operator precedence, lowest to highest (P4-16 spec): `?:`, `||`, `&&`, `== !=`,
`< > <= >=`, `|`, `^`, `&`, `<< >>`, `++ + - |+| |-|`, `* / %`, prefix operators and casts,
then postfix `. [] ()`. `&&&` and `..` only appear in keysets, below all of them.
"""

from __future__ import annotations

from . import ast as A
from .errors import CompileError
from .lexer import CONTEXTUAL_KEYWORDS, Token, tokenize

BASE_TYPE_KEYWORDS = frozenset({"bit", "int", "varbit", "bool", "string", "void", "error",
                                "match_kind", "tuple", "list"})

BINARY_PRECEDENCE = {
    "||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, ">": 4, "<=": 4, ">=": 4,
    "|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8,
    "++": 9, "+": 9, "-": 9, "|+|": 9, "|-|": 9, "*": 10, "/": 10, "%": 10,
}

COMPOUND_ASSIGN = {"+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%", "&=": "&",
                   "|=": "|", "^=": "^", "<<=": "<<", "|+|=": "|+|", "|-|=": "|-|"}

PREFIX_OPS = frozenset({"!", "~", "-", "+"})


class _Backtrack(Exception):
    """Raised inside a speculative parse that did not match."""


def describe(tok: Token) -> str:
    if tok.kind == "EOF":
        return "end of file"
    if tok.kind == "STRING":
        return f'string "{tok.value}"'
    if tok.kind == "INT":
        return f"'{tok.value[3]}'"
    return f"'{tok.value}'"


class Parser:
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
        t = self.tok
        k = t.kind
        if k == "const":
            return self.constant_decl(anns)
        if k == "extern":
            return self.extern_decl(anns)
        if k == "action":
            return self.action_decl(anns)
        if k == "parser":
            return self.parser_decl(anns)
        if k == "control":
            return self.control_decl(anns)
        if k == "package":
            return self.package_decl(anns)
        if k in ("header", "header_union", "struct"):
            return self.struct_like_decl(anns)
        if k == "enum":
            return self.enum_decl(anns)
        if k in ("error", "match_kind") and self.peek(1).kind == "{":
            return self.member_list_decl(anns)
        if k in ("typedef", "type"):
            return self.typedef_decl(anns)
        if k == "value_set":
            return self.value_set_decl(anns)
        return self.instantiation_or_function(anns)

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

    def parameters(self) -> list[A.Parameter]:
        self.expect("(")
        params = []
        if not self.at(")"):
            while True:
                params.append(self.parameter())
                if not self.accept(","):
                    break
        self.expect(")")
        return params

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
        self.expect("(")
        args = []
        if not self.at(")"):
            while True:
                args.append(self.argument())
                if not self.accept(","):
                    break
        self.expect(")")
        return args

    def argument(self) -> A.Argument:
        t = self.tok
        if self.at_name() and self.peek(1).kind == "=":
            self.advance()
            self.advance()
            return A.Argument(loc=t.loc, name=t.value, value=self.expression())
        return A.Argument(loc=t.loc, value=self.expression())

    # -- declarations --------------------------------------------------------------------------

    def constant_decl(self, anns) -> A.ConstantDecl:
        start = self.expect("const")
        ref = self.type_ref()
        name = self.name("a constant name")
        self.expect("=", "'=' in constant declaration")
        value = self.expression()
        self.expect(";")
        return A.ConstantDecl(loc=start.loc, name=name.value, annotations=anns, type_ref=ref, value=value)

    def typedef_decl(self, anns) -> A.TypedefDecl:
        start = self.advance()
        ref = self.type_ref()
        name = self.name("a type name")
        self.expect(";")
        self.declare_type(name.value)
        return A.TypedefDecl(loc=start.loc, name=name.value, annotations=anns, type_ref=ref,
                             is_newtype=start.kind == "type")

    def struct_like_decl(self, anns):
        start = self.advance()
        name = self.name("a type name")
        self.declare_type(name.value)
        tparams = self.type_params()
        self.push_type_params(tparams)
        self.expect("{")
        fields = []
        while not self.accept("}"):
            fanns = self.annotations()
            ftok = self.tok
            ref = self.type_ref()
            fname = self.name("a field name")
            self.expect(";")
            fields.append(A.StructField(loc=ftok.loc, name=fname.value, annotations=fanns, type_ref=ref))
        self.pop_type_params()
        cls = {"header": A.HeaderDecl, "header_union": A.HeaderUnionDecl, "struct": A.StructDecl}[start.kind]
        return cls(loc=start.loc, name=name.value, annotations=anns, fields=fields, type_params=tparams)

    def enum_decl(self, anns) -> A.EnumDecl:
        start = self.expect("enum")
        underlying = None
        if self.tok.kind in ("bit", "int") or (self.at("ID") and self.peek(1).kind == "ID"):
            underlying = self.type_ref()
        name = self.name("an enum name")
        self.declare_type(name.value)
        self.expect("{")
        members = []
        while not self.at("}"):
            manns = self.annotations()
            m = self.name("an enum member")
            value = None
            if self.accept("="):
                value = self.expression()
            members.append(A.EnumMember(loc=m.loc, name=m.value, annotations=manns, value=value))
            if not self.accept(","):
                break
        self.expect("}")
        return A.EnumDecl(loc=start.loc, name=name.value, annotations=anns, members=members,
                          underlying=underlying)

    def member_list_decl(self, anns):
        start = self.advance()
        self.expect("{")
        members = []
        while not self.at("}"):
            m = self.name("a member name")
            members.append(A.EnumMember(loc=m.loc, name=m.value))
            if not self.accept(","):
                break
        self.expect("}")
        cls = A.ErrorDecl if start.kind == "error" else A.MatchKindDecl
        return cls(loc=start.loc, name=start.kind, annotations=anns, members=members)

    def extern_decl(self, anns):
        start = self.expect("extern")
        if self.at_name() and (self.peek(1).kind == "{" or
                               (self.peek(1).kind == "<" and self.generic_object_follows())):
            return self.extern_object(start, anns)
        ret = self.type_ref()
        name = self.name("an extern function name")
        tparams = self.type_params()
        self.push_type_params(tparams)
        params = self.parameters()
        self.pop_type_params()
        self.expect(";")
        return A.ExternFunctionDecl(loc=start.loc, name=name.value, annotations=anns,
                                    return_type=ret, type_params=tparams, params=params)

    def generic_object_follows(self) -> bool:
        """After `extern Name`, does `<T, U> {` follow (an extern object type)?"""
        j = self.i + 2
        while self.toks[j].kind in ("ID", ","):
            j += 1
        return self.toks[j].kind == ">" and self.toks[j + 1].kind == "{"

    def extern_object(self, start, anns) -> A.ExternDecl:
        name = self.name("an extern name")
        self.declare_type(name.value)
        tparams = self.type_params()
        self.push_type_params(tparams)
        decl = A.ExternDecl(loc=start.loc, name=name.value, annotations=anns, type_params=tparams)
        self.expect("{")
        while not self.accept("}"):
            manns = self.annotations()
            mtok = self.tok
            is_abstract = bool(self.accept("abstract"))
            if self.at_name() and self.tok.value == name.value and self.peek(1).kind == "(":
                self.advance()
                params = self.parameters()
                self.expect(";")
                decl.constructors.append(A.MethodPrototype(
                    loc=mtok.loc, name=name.value, annotations=manns, params=params,
                    is_constructor=True, extern=decl))
                continue
            # the return type may use the method's own type parameters, declared after it
            ret = self.type_ref()
            mname = self.name("a method name")
            mparams = self.type_params()
            self.push_type_params(mparams)
            params = self.parameters()
            self.pop_type_params()
            self.expect(";")
            decl.methods.append(A.MethodPrototype(
                loc=mtok.loc, name=mname.value, annotations=manns, return_type=ret,
                type_params=mparams, params=params, is_abstract=is_abstract, extern=decl))
        self.pop_type_params()
        return decl

    def package_decl(self, anns) -> A.PackageTypeDecl:
        start = self.expect("package")
        name = self.name("a package name")
        self.declare_type(name.value)
        tparams = self.type_params()
        self.push_type_params(tparams)
        params = self.parameters()
        self.pop_type_params()
        self.expect(";")
        return A.PackageTypeDecl(loc=start.loc, name=name.value, annotations=anns,
                                 type_params=tparams, params=params)

    def block_header(self):
        """`name <T> (params)` of a parser or control; declares the name as a type."""
        name = self.name("a name")
        self.declare_type(name.value)
        tparams = self.type_params()
        self.push_type_params(tparams)
        params = self.parameters()
        return name, tparams, params

    def parser_decl(self, anns):
        start = self.expect("parser")
        name, tparams, params = self.block_header()
        try:
            if self.accept(";"):
                return A.ParserTypeDecl(loc=start.loc, name=name.value, annotations=anns,
                                        type_params=tparams, params=params)
            ctor = self.parameters() if self.at("(") else []
            decl = A.ParserDecl(loc=start.loc, name=name.value, annotations=anns,
                                type_params=tparams, params=params, ctor_params=ctor)
            self.expect("{")
            while not self.accept("}"):
                lanns = self.annotations()
                if self.at("state"):
                    decl.states.append(self.parser_state(lanns))
                else:
                    decl.locals.append(self.local_declaration(lanns, "parser"))
            return decl
        finally:
            self.pop_type_params()

    def control_decl(self, anns):
        start = self.expect("control")
        name, tparams, params = self.block_header()
        try:
            if self.accept(";"):
                return A.ControlTypeDecl(loc=start.loc, name=name.value, annotations=anns,
                                         type_params=tparams, params=params)
            ctor = self.parameters() if self.at("(") else []
            decl = A.ControlDecl(loc=start.loc, name=name.value, annotations=anns,
                                 type_params=tparams, params=params, ctor_params=ctor)
            self.expect("{")
            while True:
                lanns = self.annotations()
                if self.at("apply"):
                    apply_tok = self.advance()
                    decl.body = self.block(lanns)
                    decl.body.loc = apply_tok.loc
                    self.expect("}", "'}' after the apply block")
                    break
                if self.at("}") or self.at("EOF"):
                    self.fail(self.tok, f"control {name.value} has no apply block")
                decl.locals.append(self.local_declaration(lanns, "control"))
            return decl
        finally:
            self.pop_type_params()

    def local_declaration(self, anns, where: str):
        """A declaration inside a parser or control (before its states / apply block)."""
        k = self.tok.kind
        if k == "const":
            return self.constant_decl(anns)
        if k == "action" and where == "control":
            return self.action_decl(anns)
        if k == "table" and where == "control":
            return self.table_decl(anns)
        if k == "value_set":
            return self.value_set_decl(anns)
        if k == ";":
            self.advance()
            return A.EmptyStatement(loc=self.peek(-1).loc)
        if not self.starts_type() and not self.at_name():
            self.fail(self.tok, f"expected a declaration, found {describe(self.tok)}")
        return self.instantiation_or_function(anns, allow_variable=True)

    def instantiation_or_function(self, anns, allow_variable=False):
        start = self.tok
        ref = self.type_ref()
        if self.at("("):
            return self.instantiation_rest(start, anns, ref)
        name = self.name("a name")
        if self.at("(") or self.at("<"):
            tparams = self.type_params()
            self.push_type_params(tparams)
            try:
                params = self.parameters()
                body = self.block()
            finally:
                self.pop_type_params()
            return A.FunctionDecl(loc=start.loc, name=name.value, annotations=anns, return_type=ref,
                                  type_params=tparams, params=params, body=body)
        if allow_variable:
            init = None
            if self.accept("="):
                init = self.expression()
            self.expect(";")
            return A.VariableDecl(loc=start.loc, name=name.value, annotations=anns, type_ref=ref, init=init)
        self.fail(self.tok, f"expected '(' or '<', found {describe(self.tok)}")

    def instantiation_rest(self, start, anns, ref) -> A.Instantiation:
        args = self.arguments()
        name = self.name("an instance name")
        initializer = []
        if self.accept("="):
            self.expect("{")
            while not self.accept("}"):
                fanns = self.annotations()
                initializer.append(self.instantiation_or_function(fanns))
        self.expect(";")
        return A.Instantiation(loc=start.loc, name=name.value, annotations=anns, type_ref=ref,
                               args=args, initializer=initializer)

    def value_set_decl(self, anns) -> A.ValueSetDecl:
        start = self.expect("value_set")
        self.expect("<")
        ref = self.type_ref()
        self.expect(">")
        self.expect("(")
        size = self.expression()
        self.expect(")")
        name = self.name("a value_set name")
        self.expect(";")
        return A.ValueSetDecl(loc=start.loc, name=name.value, annotations=anns, type_ref=ref, size=size)

    def action_decl(self, anns) -> A.ActionDecl:
        start = self.expect("action")
        name = self.name("an action name")
        params = self.parameters()
        body = self.block()
        return A.ActionDecl(loc=start.loc, name=name.value, annotations=anns, params=params, body=body)

    # -- parser states -------------------------------------------------------------------------

    def parser_state(self, anns) -> A.ParserState:
        start = self.expect("state")
        name = self.name("a state name")
        state = A.ParserState(loc=start.loc, name=name.value, annotations=anns)
        self.expect("{")
        while not self.at("}"):
            if self.at("transition"):
                self.transition(state)
                break
            state.statements.append(self.statement())
        self.expect("}", "'}' (the transition statement must be last in a state)")
        return state

    def transition(self, state: A.ParserState):
        self.expect("transition")
        if self.at("select"):
            sel = self.advance()
            self.expect("(")
            exprs = [self.expression()]
            while self.accept(","):
                exprs.append(self.expression())
            self.expect(")")
            self.expect("{")
            cases = []
            while not self.accept("}"):
                self.annotations()
                ctok = self.tok
                keyset = self.keyset_or_tuple()
                self.expect(":")
                target = self.name("a state name")
                self.expect(";")
                cases.append(A.SelectCase(loc=ctok.loc, keyset=keyset, next_state=target.value,
                                          state_loc=target.loc))
            state.select = A.SelectExpression(loc=sel.loc, exprs=exprs, cases=cases)
        else:
            target = self.name("a state name")
            self.expect(";")
            state.next_state = target.value
            state.next_loc = target.loc

    def keyset_or_tuple(self) -> A.Expression:
        """A keyset, or `(k1, k2, ...)` tuple of keysets."""
        if self.at("("):
            start = self.tok

            def tuple_keyset():
                self.expect("(")
                elems = [self.keyset()]
                while self.accept(","):
                    elems.append(self.keyset())
                self.expect(")")
                if not self.at(":"):
                    raise _Backtrack()
                return elems

            elems = self.speculate(tuple_keyset)
            if elems is not None:
                if len(elems) == 1:
                    return elems[0]
                return A.ListExpression(loc=start.loc, elements=elems)
        return self.keyset()

    def keyset(self) -> A.Expression:
        t = self.tok
        if t.kind == "default":
            self.advance()
            return A.DefaultExpression(loc=t.loc)
        if t.kind == "ID" and t.value == "_" and self.peek(1).kind in (",", ")", ":"):
            self.advance()
            return A.DontCareExpression(loc=t.loc)
        e = self.expression()
        if self.at("&&&"):
            self.advance()
            return A.MaskExpression(loc=e.loc, value=e, mask=self.expression())
        if self.at(".."):
            self.advance()
            return A.RangeExpression(loc=e.loc, lo=e, hi=self.expression())
        return e

    # -- tables --------------------------------------------------------------------------------

    def table_decl(self, anns) -> A.TableDecl:
        start = self.expect("table")
        name = self.name("a table name")
        table = A.TableDecl(loc=start.loc, name=name.value, annotations=anns)
        self.expect("{")
        while not self.accept("}"):
            panns = self.annotations()
            is_const = bool(self.accept("const"))
            ptok = self.name("a table property")
            prop = ptok.value
            if prop == "key":
                self.expect("=")
                self.table_key(table)
            elif prop == "actions":
                self.expect("=")
                self.table_actions(table)
            elif prop == "entries":
                self.expect("=")
                table.entries = self.table_entries()
                table.entries_const = is_const
                table.has_entries = True
            elif prop == "default_action":
                self.expect("=")
                table.default_action = self.action_ref([])
                table.default_is_const = is_const
                self.expect(";")
            else:
                self.expect("=", f"'=' after table property {prop}")
                value = self.expression()
                self.expect(";")
                table.properties[prop] = A.TableProperty(loc=ptok.loc, name=prop, value=value,
                                                         is_const=is_const, annotations=panns)
        return table

    def table_key(self, table: A.TableDecl):
        self.expect("{")
        while not self.accept("}"):
            etok = self.tok
            expr = self.expression()
            self.expect(":")
            mk = self.name("a match kind")
            kanns = self.annotations()
            self.expect(";")
            table.key.append(A.KeyElement(loc=etok.loc, expr=expr, match_kind=mk.value,
                                          annotations=kanns, match_kind_loc=mk.loc))

    def table_actions(self, table: A.TableDecl):
        self.expect("{")
        while not self.accept("}"):
            aanns = self.annotations()
            table.actions.append(self.action_ref(aanns))
            if not self.accept(";"):
                self.accept(",")

    def action_ref(self, anns) -> A.ActionRef:
        t = self.tok
        is_global = bool(self.accept("."))
        name = self.name("an action name")
        ref = A.ActionRef(loc=t.loc, name=name.value, is_global=is_global, annotations=anns)
        if self.at("("):
            ref.args = self.arguments()
            ref.has_parens = True
        return ref

    def table_entries(self) -> list[A.TableEntry]:
        self.expect("{")
        entries = []
        while not self.accept("}"):
            eanns = self.annotations()
            etok = self.tok
            is_const = bool(self.accept("const"))
            priority = None
            if self.at("priority"):
                self.advance()
                self.expect("=")
                priority = self.expression()
                self.expect(":")
            keys = self.keyset_or_tuple()
            keys = keys.elements if isinstance(keys, A.ListExpression) else [keys]
            self.expect(":")
            action = self.action_ref([])
            eanns = eanns + self.annotations()
            self.expect(";")
            entries.append(A.TableEntry(loc=etok.loc, keys=keys, action=action, priority=priority,
                                        is_const=is_const, annotations=eanns))
        return entries

    # -- statements ----------------------------------------------------------------------------

    def block(self, anns=None) -> A.BlockStatement:
        start = self.expect("{")
        stmts = []
        while not self.accept("}"):
            if self.at("EOF"):
                self.fail(self.tok, "expected '}', found end of file")
            stmts.append(self.statement())
        return A.BlockStatement(loc=start.loc, statements=stmts, annotations=anns or [])

    def statement(self):
        anns = self.annotations() if self.at("@") else []
        t = self.tok
        k = t.kind
        if k == "{":
            return self.block(anns)
        if k == "if":
            self.advance()
            self.expect("(")
            cond = self.expression()
            self.expect(")")
            then = self.statement()
            else_ = self.statement() if self.accept("else") else None
            return A.IfStatement(loc=t.loc, cond=cond, then=then, else_=else_)
        if k == "switch":
            return self.switch_statement()
        if k == "return":
            self.advance()
            value = None if self.at(";") else self.expression()
            self.expect(";")
            return A.ReturnStatement(loc=t.loc, value=value)
        if k == "exit":
            self.advance()
            self.expect(";")
            return A.ExitStatement(loc=t.loc)
        if k == "break" or k == "continue":
            self.advance()
            self.expect(";")
            return (A.BreakStatement if k == "break" else A.ContinueStatement)(loc=t.loc)
        if k == ";":
            self.advance()
            return A.EmptyStatement(loc=t.loc)
        if k == "const":
            return self.constant_decl(anns)
        if k == "for":
            return self.for_statement()
        if k == "transition":
            self.fail(t, "a transition statement is only allowed at the end of a parser state")
        if self.declaration_follows():
            return self.instantiation_or_function(anns, allow_variable=True)
        stmt = self.simple_statement()
        self.expect(";")
        return stmt

    def declaration_follows(self) -> bool:
        """Does a local declaration (`T x ...` or `T(args) x`) start here?"""
        if not self.starts_type():
            return False
        t = self.tok
        if t.kind in ("error", "match_kind") and self.peek(1).kind == ".":
            return False
        if t.kind == "ID" and self.peek(1).kind == ".":
            return False  # MyEnum.A ... is an expression
        return True

    def simple_statement(self):
        """An assignment or a method call (no trailing ';')."""
        t = self.tok
        lhs = self.expression()
        op_tok = self.tok
        if op_tok.kind == "=":
            self.advance()
            return A.AssignmentStatement(loc=lhs.loc, lhs=lhs, rhs=self.expression())
        if op_tok.kind in COMPOUND_ASSIGN:
            self.advance()
            return self.compound_assignment(op_tok, lhs, COMPOUND_ASSIGN[op_tok.kind])
        if op_tok.kind == ">" and op_tok.adjacent_next and self.peek(1).kind == ">=":
            self.advance()
            self.advance()
            return self.compound_assignment(op_tok, lhs, ">>")
        if isinstance(lhs, A.MethodCallExpression):
            return A.MethodCallStatement(loc=t.loc, call=lhs)
        if isinstance(lhs, A.PathExpression) and op_tok.kind == "ID" and not self.speculating:
            # `T x;` where T is not a known type
            raise CompileError(lhs.loc, f"type '{lhs.name}' is not declared")
        self.fail(op_tok, f"expected '=' or a method call, found {describe(op_tok)}")

    def compound_assignment(self, op_tok, lhs, op):
        rhs = self.expression()
        value = A.BinaryExpression(loc=lhs.loc, op=op, left=lhs, right=rhs)
        return A.AssignmentStatement(loc=lhs.loc, lhs=lhs, rhs=value, op=op + "=")

    def switch_statement(self) -> A.SwitchStatement:
        start = self.expect("switch")
        self.expect("(")
        expr = self.expression()
        self.expect(")")
        self.expect("{")
        cases = []
        while not self.accept("}"):
            ltok = self.tok
            if self.accept("default"):
                label = A.DefaultExpression(loc=ltok.loc)
            else:
                label = self.expression()
            self.expect(":")
            body = self.block() if self.at("{") else None
            cases.append(A.SwitchCase(loc=ltok.loc, label=label, body=body))
        is_action_run = isinstance(expr, A.MemberExpression) and expr.member == "action_run"
        return A.SwitchStatement(loc=start.loc, expr=expr, cases=cases, is_action_run=is_action_run)

    def for_statement(self):
        start = self.expect("for")
        self.expect("(")
        in_form = self.speculate(self.for_in_header)
        if in_form is not None:
            var, collection = in_form
            self.expect(")")
            body = self.statement()
            return A.ForInStatement(loc=start.loc, var=var, collection=collection, body=body)
        init = []
        if not self.at(";"):
            init = self.for_clause_list(allow_decl=True)
        self.expect(";")
        cond = None if self.at(";") else self.expression()
        self.expect(";")
        updates = [] if self.at(")") else self.for_clause_list(allow_decl=False)
        self.expect(")")
        body = self.statement()
        return A.ForStatement(loc=start.loc, init=init, cond=cond, updates=updates, body=body)

    def for_in_header(self):
        anns = self.annotations()
        t = self.tok
        ref = None
        if not (self.at_name() and self.peek(1).kind == "in"):
            ref = self.type_ref()
        name = self.name("a loop variable")
        self.expect("in")
        collection = self.keyset()
        return A.VariableDecl(loc=t.loc, name=name.value, annotations=anns, type_ref=ref), collection

    def for_clause_list(self, allow_decl):
        clauses = []
        while True:
            anns = self.annotations() if allow_decl else []
            t = self.tok
            if allow_decl and self.declaration_follows():
                ref = self.type_ref()
                name = self.name("a variable name")
                init = self.expression() if self.accept("=") else None
                clauses.append(A.VariableDecl(loc=t.loc, name=name.value, annotations=anns,
                                              type_ref=ref, init=init))
            else:
                clauses.append(self.simple_statement())
            if not self.accept(","):
                return clauses

    # -- expressions ---------------------------------------------------------------------------

    def expression(self) -> A.Expression:
        cond = self.binary(1)
        if self.at("?"):
            self.advance()
            then = self.expression()
            self.expect(":", "':' in conditional expression")
            else_ = self.expression()
            return A.TernaryExpression(loc=cond.loc, cond=cond, then=then, else_=else_)
        return cond

    def binary_operator(self):
        """The binary operator at the cursor and how many tokens it spans, or (None, 0)."""
        t = self.tok
        k = t.kind
        if k == ">":
            nxt = self.peek(1)
            if t.adjacent_next and nxt.kind == ">":
                return ">>", 2
            if t.adjacent_next and nxt.kind == ">=":
                return None, 0  # `>>=` compound assignment
            return ">", 1
        if k in BINARY_PRECEDENCE:
            return k, 1
        return None, 0

    def binary(self, min_prec: int) -> A.Expression:
        left = self.unary()
        while True:
            op, width = self.binary_operator()
            if op is None:
                return left
            prec = BINARY_PRECEDENCE[op]
            if prec < min_prec:
                return left
            self.i += width
            right = self.binary(prec + 1)
            left = A.BinaryExpression(loc=left.loc, op=op, left=left, right=right)

    def unary(self) -> A.Expression:
        t = self.tok
        if t.kind in PREFIX_OPS:
            self.advance()
            return A.UnaryExpression(loc=t.loc, op=t.kind, operand=self.unary())
        if t.kind == "(" and self.starts_type(1):
            cast = self.speculate(self.cast_prefix)
            if cast is not None:
                cast.expr = self.unary()
                return cast
        return self.postfix(self.primary())

    def cast_prefix(self) -> A.CastExpression:
        t = self.expect("(")
        ref = self.type_ref()
        self.expect(")")
        return A.CastExpression(loc=t.loc, type_ref=ref, expr=None)

    def primary(self) -> A.Expression:
        t = self.tok
        k = t.kind
        if k == "INT":
            self.advance()
            return self.int_literal(t)
        if k == "STRING":
            self.advance()
            return A.StringLiteral(loc=t.loc, value=t.value)
        if k == "true" or k == "false":
            self.advance()
            return A.BoolLiteral(loc=t.loc, value=k == "true")
        if k == "(":
            self.advance()
            e = self.expression()
            self.expect(")")
            return e
        if k == "{":
            return self.brace_expression()
        if k == "...":
            self.advance()
            return A.DotsExpression(loc=t.loc)
        if k == ".":
            self.advance()
            name = self.name()
            return A.PathExpression(loc=t.loc, name=name.value, is_global=True)
        if k in ("error", "match_kind", "this"):
            self.advance()
            return A.PathExpression(loc=t.loc, name=k)
        if k in ("bit", "int", "varbit", "bool", "tuple") or (k == "ID" and self.is_type_name(t.value)
                                                             and self.peek(1).kind in ("(", "<")):
            return self.constructor_call()
        if k == "ID" and t.value == "_":
            self.advance()
            return A.DontCareExpression(loc=t.loc)
        if k == "ID" or k in CONTEXTUAL_KEYWORDS:
            self.advance()
            return A.PathExpression(loc=t.loc, name=t.value)
        self.fail(t, f"expected an expression, found {describe(t)}")

    def constructor_call(self) -> A.Expression:
        t = self.tok
        ref = self.type_ref()
        if not self.at("("):
            self.fail(self.tok, f"expected '(' after type in expression, found {describe(self.tok)}")
        return A.ConstructorCallExpression(loc=t.loc, type_ref=ref, args=self.arguments())

    def int_literal(self, t: Token) -> A.IntLiteral:
        value, width, signed, text = t.value
        return A.IntLiteral(loc=t.loc, value=value, width=width, signed=signed, text=text)

    def brace_expression(self) -> A.Expression:
        start = self.expect("{")
        if self.at("#"):
            self.advance()
            self.expect("}")
            return A.InvalidHeaderExpression(loc=start.loc)
        if self.accept("}"):
            return A.ListExpression(loc=start.loc, elements=[])
        if self.at_name() and self.peek(1).kind == "=":
            fields = []
            while True:
                if self.at("..."):
                    dots = self.advance()
                    fields.append(A.NamedExpression(loc=dots.loc, name="...",
                                                    value=A.DotsExpression(loc=dots.loc)))
                else:
                    n = self.name("a field name")
                    self.expect("=")
                    fields.append(A.NamedExpression(loc=n.loc, name=n.value, value=self.expression()))
                if not self.accept(","):
                    break
                if self.at("}"):
                    break
            self.expect("}")
            return A.StructExpression(loc=start.loc, fields=fields)
        elems = [self.expression()]
        while self.accept(","):
            if self.at("}"):
                break
            elems.append(self.expression())
        self.expect("}")
        return A.ListExpression(loc=start.loc, elements=elems)

    def postfix(self, e: A.Expression) -> A.Expression:
        while True:
            t = self.tok
            k = t.kind
            if k == ".":
                self.advance()
                name = self.name("a member name")
                e = A.MemberExpression(loc=e.loc, expr=e, member=name.value)
            elif k == "[":
                self.advance()
                index = self.expression()
                if self.accept(":"):
                    lo = self.expression()
                    self.expect("]")
                    e = A.SliceExpression(loc=e.loc, expr=e, hi=index, lo=lo)
                else:
                    self.expect("]")
                    e = A.IndexExpression(loc=e.loc, expr=e, index=index)
            elif k == "(":
                e = A.MethodCallExpression(loc=e.loc, callee=e, args=self.arguments())
            elif k == "<" and isinstance(e, (A.PathExpression, A.MemberExpression)) and \
                    (self.starts_type(1) or (self.peek(1).kind == "ID" and self.peek(1).value == "_")):
                type_args = self.speculate(self.call_type_args)
                if type_args is None:
                    return e
                e = A.MethodCallExpression(loc=e.loc, callee=e, type_args=type_args, args=self.arguments())
            else:
                return e

    def call_type_args(self) -> list[A.TypeRef]:
        self.expect("<")
        args = self.type_arg_list()
        self.expect(">")
        if not self.at("("):
            raise _Backtrack()
        return args


def parse_program(text: str, filename: str) -> A.Program:
    """Tokenize and parse preprocessed `text`; raises CompileError on a syntax error."""
    parser = Parser(tokenize(text, filename), text)
    return parser.parse_program()
