"""Direct invocation of a parser or control type: ``C.apply(args)`` inside a block.

P4_16 lets a block apply another parser/control *type* without instantiating it (when it
has no constructor parameters). p4c rewrites each such call into an instance declared in
the calling block (named after the type, ``C``; further ones ``C_0``, ``C_1``...) and an
ordinary ``C.apply(args)`` on it (its InstantiateDirectCalls pass). We make the same
rewrite on the AST before scopes are built, so the names of the callee's tables and
actions (``Caller.C.t``), the checker and the pipeline all see an ordinary instance.
"""

from __future__ import annotations

from p4switch.frontend import ast

_BLOCKS = (ast.ParserDecl, ast.ControlDecl)


def instantiate_direct_calls(program: ast.Program) -> None:
    """Rewrite every ``T.apply(...)`` with T a top-level parser/control declaration."""
    blocks = {d.name: d for d in program.declarations if isinstance(d, _BLOCKS)}
    for d in program.declarations:
        if not isinstance(d, _BLOCKS):
            continue
        roots: list[ast.Node] = [d.body] if isinstance(d, ast.ControlDecl) else list(d.states)
        taken = {x.name for x in d.locals} | {p.name for p in (*d.params, *d.ctor_params)}
        new: list[ast.Declaration] = []
        for root in roots:
            for n in ast.walk(root):
                if _is_direct_call(n, blocks):
                    new.append(_rewrite(n, taken))
        d.locals[:0] = new


def _is_direct_call(n: ast.Node, blocks: dict[str, ast.Declaration]) -> bool:
    if not (isinstance(n, ast.CallExpr) and isinstance(n.method, ast.TypeMemberExpr)):
        return False
    m = n.method
    return m.member == "apply" and isinstance(m.type_ref, ast.TypeName) and m.type_ref.name in blocks


def _rewrite(call: ast.CallExpr, taken: set[str]) -> ast.InstantiationDecl:
    method = call.method
    assert isinstance(method, ast.TypeMemberExpr) and isinstance(method.type_ref, ast.TypeName)
    type_name = method.type_ref.name
    name, i = type_name, 0
    while name in taken:
        name, i = f"{type_name}_{i}", i + 1
    taken.add(name)
    loc = method.loc
    inst = ast.InstantiationDecl(loc=loc, name=name,
                                 type_ref=ast.TypeName(loc=method.type_ref.loc, name=type_name, global_scope=True))
    call.method = ast.MemberExpr(loc=loc, expr=ast.PathExpr(loc=method.type_ref.loc, name=name), member="apply")
    return inst
