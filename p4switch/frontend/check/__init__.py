"""P4_16 checker: names, types, constants -- turns the parser's AST into the IR.

``check_program(program) -> CheckedProgram`` runs these passes (like p4c's front end),
annotating the AST in place, and raises :class:`CheckErrors` (a ``P4ErrorGroup`` whose
``errors`` are every problem found, each located at the offending token or expression):

1. ``collect``  -- scopes and declarations; duplicates (overloads by parameter count are
   legal for functions, extern functions and methods);
2. ``resolve``  -- every TypeRef to a ``types`` type: typedef chains, ``type`` new types,
   specializations (``register<bit<32>>``), header stacks, constant widths;
3. ``exprs``/``calls``/``stmts``/``tables``/``blocks`` -- expression typing with the P4_16
   conversion rules, constant folding, l-values and directions, calls and generic
   inference, parser states and selects, table properties, instances and the package;
4. ``program``  -- the :class:`CheckedProgram` summary with fully qualified names (rules in
   ``names.py``: control-local objects are ``<control>.<name>``, global ones unqualified,
   ``@name("x")`` is relative to the enclosing block and ``@name(".x")`` absolute).

IR contract (in addition to the one in ``ast.py``):

* ``Expression.type`` is always set; ``const_value`` is set on every compile-time constant
  (see ``values.py`` for the Python representation). An ``int``-typed sub-expression that
  was implicitly converted keeps its value; the converted node's ``type`` is the target.
* ``PathExpr.decl`` of a transition target is the ParserState, or ``ACCEPT_STATE`` /
  ``REJECT_STATE`` (synthetic nodes exported here) for the implicit states.
* Calls, constructor calls, instantiations (``InstantiationDecl``), table action
  references (``ActionRef``) and entries' actions carry ``bound_args``: one
  ``(types.Parameter, Expression | None)`` per callee parameter in parameter order (None:
  the default applies) and ``type_arg_types`` (types bound to the callee's type params).
* A ``CallExpr`` of an action used as ``default_action`` has ``call_kind`` ACTION.
* ``InstantiationDecl.instance_type`` is the type of the instance (an ``ExternType`` with
  its type arguments, inferred ones included, or the parser/control/package type).
* Switch labels on ``action_run`` have ``decl`` = the ActionDecl.
* ``Checker.table_facts`` / ``TableInfo.facts`` summarize a table's properties.
* Rewrites p4c's front end makes, so that later passes see the program p4c's back ends
  see: a table without ``default_action`` gets ``default_action = NoAction()`` (and
  ``@defaultonly NoAction`` in its actions unless listed; nodes located at the table); a
  table no apply block applies is removed from its control's ``locals`` (with a warning);
  ``lhs op= rhs`` is parsed as ``lhs = lhs op rhs`` (the right side reads a copy of lhs).
* Loops (``ForStmt``, ``ForInStmt``, ``BreakStmt``, ``ContinueStmt``) are checked: the
  loop has its own scope (init variables, the for-in variable, typed as declared or as the
  element of the stack/list); ``break``/``continue`` only inside a loop body.
"""

from p4switch.frontend.check.core import ACCEPT_STATE, REJECT_STATE
from p4switch.frontend.check.driver import Checker, CheckErrors, check_program
from p4switch.frontend.check.names import qualify
from p4switch.frontend.check.program import (
    ActionInfo,
    BlockInfo,
    CheckedProgram,
    DefaultActionInfo,
    DigestInfo,
    InstanceInfo,
    KeyInfo,
    TableActionInfo,
    TableInfo,
    ValueSetInfo,
)
from p4switch.frontend.check.values import SymbolicValue

__all__ = [
    "ACCEPT_STATE", "REJECT_STATE", "ActionInfo", "BlockInfo", "CheckErrors", "CheckedProgram",
    "Checker", "DefaultActionInfo", "DigestInfo", "InstanceInfo", "KeyInfo", "SymbolicValue",
    "TableActionInfo", "TableInfo", "ValueSetInfo", "check_program", "qualify",
]
