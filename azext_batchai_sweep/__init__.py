# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The `az batchai sweep` command group: parameter sweeps on Azure Batch AI.

Only the command layer lives at this level; the sweep library is `core/` (it never imports azure.cli).
"""
try:
    from azure.cli.core import AzCommandsLoader
except ImportError:  # pragma: no cover - exercised by tests/core/test_core_isolation.py in a subprocess
    # core/ and localservice/ are plain libraries: they must import where azure-cli is not installed, and
    # importing them goes through this package. Without az there is no command loader to define.
    AzCommandsLoader = object


class BatchAiSweepCommandsLoader(AzCommandsLoader):

    def __init__(self, cli_ctx=None):
        from azure.cli.core.commands import CliCommandType
        from ._help import helps  # pylint: disable=unused-import  # registers the help entries with knack
        custom_type = CliCommandType(operations_tmpl='azext_batchai_sweep.custom#{}')
        super().__init__(cli_ctx=cli_ctx, custom_command_type=custom_type)

    def load_command_table(self, args):
        from .commands import load_command_table
        load_command_table(self, args)
        return self.command_table

    def load_arguments(self, command):
        from ._params import load_arguments
        load_arguments(self, command)


COMMAND_LOADER_CLS = BatchAiSweepCommandsLoader
