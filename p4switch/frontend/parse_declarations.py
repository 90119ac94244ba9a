"""Declarations of the P4-16 grammar (the `DeclarationParser` part of `parser.Parser`):
constants, typedefs, headers/structs/enums, externs, packages, parsers and their states,
controls, actions, instantiations, value sets and tables."""

from __future__ import annotations

from . import ast as A
from .parser_core import _Backtrack, describe


class DeclarationParser:
    """Parses declarations; mixed into `parser.Parser`, which supplies the token helpers."""

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
        name, tparams, params = self.signature("an extern function name")
        self.expect(";")
        return A.ExternFunctionDecl(loc=start.loc, name=name.value, annotations=anns,
                                    return_type=ret, type_params=tparams, params=params)

    def signature(self, what: str):
        """`name <T> (params)` of a function or method: the name token, its type parameters
        and its parameters (which may use them)."""
        name = self.name(what)
        tparams = self.type_params()
        self.push_type_params(tparams)
        params = self.parameters()
        self.pop_type_params()
        return name, tparams, params

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
            mname, mparams, params = self.signature("a method name")
            self.expect(";")
            decl.methods.append(A.MethodPrototype(
                loc=mtok.loc, name=mname.value, annotations=manns, return_type=ret,
                type_params=mparams, params=params, is_abstract=is_abstract, extern=decl))
        self.pop_type_params()
        return decl

    def package_decl(self, anns) -> A.PackageTypeDecl:
        start = self.expect("package")
        name, tparams, params = self.block_header("a package name")
        self.pop_type_params()
        self.expect(";")
        return A.PackageTypeDecl(loc=start.loc, name=name.value, annotations=anns,
                                 type_params=tparams, params=params)

    def block_header(self, what="a name"):
        """`name <T> (params)` of a package, parser or control; declares the name as a type
        and pushes its type parameters (the caller pops them)."""
        name = self.name(what)
        self.declare_type(name.value)
        tparams = self.type_params()
        self.push_type_params(tparams)
        params = self.parameters()
        return name, tparams, params

    def block_decl(self, keyword, anns, type_decl, decl_class, parse_body):
        """`keyword name <T> (params)`, then `;` (a parser or control type: a `type_decl`)
        or `(ctor_params) { ... }` (a `decl_class`, whose locals and body `parse_body(decl)`
        reads after the `{`)."""
        start = self.expect(keyword)
        name, tparams, params = self.block_header()
        try:
            if self.accept(";"):
                return type_decl(loc=start.loc, name=name.value, annotations=anns,
                                 type_params=tparams, params=params)
            ctor = self.parameters() if self.at("(") else []
            decl = decl_class(loc=start.loc, name=name.value, annotations=anns,
                              type_params=tparams, params=params, ctor_params=ctor)
            self.expect("{")
            parse_body(decl)
            return decl
        finally:
            self.pop_type_params()

    def parser_decl(self, anns):
        return self.block_decl("parser", anns, A.ParserTypeDecl, A.ParserDecl, self.parser_body)

    def parser_body(self, decl: A.ParserDecl):
        while not self.accept("}"):
            lanns = self.annotations()
            if self.at("state"):
                decl.states.append(self.parser_state(lanns))
            else:
                decl.locals.append(self.local_declaration(lanns, "parser"))

    def control_decl(self, anns):
        return self.block_decl("control", anns, A.ControlTypeDecl, A.ControlDecl,
                               self.control_body)

    def control_body(self, decl: A.ControlDecl):
        while True:
            lanns = self.annotations()
            if self.at("apply"):
                apply_tok = self.advance()
                decl.body = self.block(lanns)
                decl.body.loc = apply_tok.loc
                self.expect("}", "'}' after the apply block")
                return
            if self.at("}") or self.at("EOF"):
                self.fail(self.tok, f"control {decl.name} has no apply block")
            decl.locals.append(self.local_declaration(lanns, "control"))

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
