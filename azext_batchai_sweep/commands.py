# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
from ._format import sweep_create_table_format


def load_command_table(self, _):
    # A subgroup of az's own (deprecated, hidden) `batchai` group: `az batchai sweep ...` reads like the commands
    # users already know (`az batchai job create`), and -g/-w/-e mean the same things.
    with self.command_group('batchai sweep', is_preview=True) as g:
        g.custom_command('create', 'create_sweep', table_transformer=sweep_create_table_format)
