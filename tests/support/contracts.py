"""An import-linter contract: no module of the test suite imports a ``test_*`` module.

import-linter's own contracts match whole module names, not name patterns, hence this one.
"""

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain.contract import Contract, ContractCheck


def _is_test_module(name: str) -> bool:
    return name.rsplit(".", 1)[-1].startswith("test_")


class NoTestModuleImports(Contract):
    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        offending = sorted(
            (importer, imported)
            for importer in graph.modules
            if importer.startswith("tests.")
            for imported in graph.find_modules_directly_imported_by(importer)
            if imported.startswith("tests.") and _is_test_module(imported)
        )
        return ContractCheck(kept=not offending, metadata={"offending": offending})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported in check.metadata["offending"]:
            output.print_error(f"{importer} imports the test module {imported}.")
