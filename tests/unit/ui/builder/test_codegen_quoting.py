"""The builder's exported code quotes any column name.
"""

from __future__ import annotations

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.ui.builder._codegen import workflow_code


# ---- clear errors: exported code --------------------------------------------------------------
def test_exported_code_quotes_any_column_name():
    names = ["a b", 'q"uote', "it's", "back\\slash", "tab\tname", "new\nline", "é ü ✓ 😀",
             "--", "# not a comment", "x') ; import os ; ('"]
    names += [f"a long column name with spaces number {i}" for i in range(5)]
    wf = irs.Workflow((names >> ops.Categorify()) + ([["a b", "it's"]] >> ops.HashedCross(7)))
    code = workflow_code(wf)
    namespace: dict = {}
    exec(compile(code, "<export>", "exec"), namespace)
    assert namespace["workflow"].to_config()["nodes"] == wf.to_config()["nodes"]
    assert "import os" not in code.replace("x') ; import os ; ('", "")
