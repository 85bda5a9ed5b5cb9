# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The `az batchai sweep` command group: parameter sweeps on Azure Batch AI, or on a local Batch AI service.

    (this level)   the az command layer: commands.py (the command table), _params.py, _help.py, _validators.py, and
                   custom.py, which maps each command's arguments to calls; the _*.py modules beside it hold what the
                   commands share on the az side (targeting and client, errors and exit codes, output and tables,
                   planning, submission, `sweep run`'s plumbing, `local start|status|stop`)
    core/          the sweep library (spec, service client, tuning, outputs, report, code); it never imports azure.cli
    localservice/  a local service speaking Batch AI's REST API, whose jobs run on a scheduler: local processes,
                   Slurm or Azure Batch
    utilities/     a drop-in replacement of the Batch AI repository's `utilities` package, on the core
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
        _route_core_logging()
        super().__init__(cli_ctx=cli_ctx, custom_command_type=custom_type)
        if cli_ctx is not None:
            from ._exit_codes import install
            install(cli_ctx)  # each outcome its own exit code (docs/pipelines.md#exit-codes)

    def load_command_table(self, args):
        from .commands import load_command_table
        load_command_table(self, args)
        from ._builtin_routing import is_builtin_batchai, register
        if is_builtin_batchai(args):
            # knack gave the parent group `batchai` an empty placeholder entry here; az merges an extension's groups
            # over the modules', so it would replace az's own `batchai` group and, with it, the group's deprecation
            # warning on the built-in commands. For them the group stays az's (the sweep commands keep theirs).
            if self.command_group_table.get('batchai') == {}:
                del self.command_group_table['batchai']
            # While `local start` has set the local target, az's own `az batchai` commands use it too.
            register(self.cli_ctx)
        return self.command_table

    def load_arguments(self, command):
        from ._params import load_arguments
        load_arguments(self, command)


def _route_core_logging():
    """Send the core's log records through knack's "cli" logger.

    core/ logs with the standard `logging` module under its own names (it never imports knack), but az shows the
    root logger's records only at CRITICAL unless --debug: the core's warnings (a parameter no placeholder uses, a
    job not submitted, a listing retried while waiting) would never reach the user. knack's `cli` logger does not
    propagate, so each record is shown once, at the level the user asked for (--only-show-errors, --verbose).
    """
    import logging
    logging.getLogger('azext_batchai_sweep.core').parent = logging.getLogger('cli.azext_batchai_sweep')


COMMAND_LOADER_CLS = BatchAiSweepCommandsLoader
