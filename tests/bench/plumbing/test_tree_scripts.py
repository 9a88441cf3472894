"""The scripts the bench runs inside a baseline commit's files (sim_bench.HOPS_SCRIPT, netns_bench.RATE_SCRIPT)
import that commit's own modules, under issue 51's names in a tree that has them and the flat topo/ names in
one before it (the bench's baselines 07b370d and 55f310b), and nothing from this checkout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench import p4rt_writes as pw
from tests.bench.netns_bench import RATE_IMPORTS
from tests.bench.run import NETNS_BASELINE
from tests.bench.sim_bench import ENGINE_BASELINE, HOPS_IMPORTS, hops_per_s

#: appended to a script's imports: where each of the project's modules it loaded came from
WHERE_FROM = """
import sys
print(json.dumps(sorted(m.__file__ for n, m in list(sys.modules.items())
                        if n.split(".")[0] in ("topo", "controlplane", "p4switch", "hosts", "runtime", "tests")
                        and getattr(m, "__file__", None))))
"""


def _loaded_files(imports: str, tree: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", imports + WHERE_FROM], cwd=tree, capture_output=True, text=True,
                          timeout=300, check=False, env=None)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _tree_or_skip(rev: str):  # noqa: ANN202 - the commit_tree context manager
    if pw.resolve_commit(rev) is None:
        pytest.skip(f"commit {rev} is not in this clone")
    return pw.commit_tree(rev)


@pytest.mark.parametrize(("imports", "rev"), [(HOPS_IMPORTS, "HEAD"), (HOPS_IMPORTS, ENGINE_BASELINE),
                                               (RATE_IMPORTS, "HEAD"), (RATE_IMPORTS, NETNS_BASELINE)],
                         ids=["hops-HEAD", f"hops-{ENGINE_BASELINE}", "rate-HEAD", f"rate-{NETNS_BASELINE}"])
def test_a_tree_script_imports_only_that_trees_files(imports: str, rev: str) -> None:
    with _tree_or_skip(rev) as tree:
        files = _loaded_files(imports, tree)
        assert any("/topo/" in f for f in files)
        assert [f for f in files if not f.startswith(str(tree) + "/")] == []


@pytest.mark.parametrize("rev", ["HEAD", ENGINE_BASELINE])
def test_the_hop_count_runs_in_this_tree_and_the_engine_baseline(rev: str) -> None:
    with _tree_or_skip(rev) as tree:
        hops, wall, cpu = hops_per_s(tree, 1, 0.3)
    assert hops > 0
    assert wall > 0 and cpu > 0
