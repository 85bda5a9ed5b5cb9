# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
from ._format import (local_service_table_format, sweep_create_table_format, sweep_delete_table_format,
                      sweep_download_table_format, sweep_metrics_table_format, sweep_report_table_format,
                      sweep_resubmit_table_format, sweep_run_table_format, sweep_status_table_format,
                      sweep_stop_table_format, sweep_submit_table_format)

DELETE_CONFIRMATION = ('Delete the selected jobs of this sweep? Their outputs on the service are deleted with them '
                       'and cannot be recovered.')
STOP_CONFIRMATION = ('Stop the queued and running jobs of this sweep? They are terminated (their outputs are kept; '
                     '"az batchai sweep resubmit --state terminated" runs them again).')


def load_command_table(self, _):
    # A subgroup of az's own (deprecated, hidden) `batchai` group: `az batchai sweep ...` reads like the commands
    # users already know (`az batchai job create`), and -g/-w/-e mean the same things.
    with self.command_group('batchai sweep', is_preview=True) as g:
        g.custom_command('create', 'create_sweep', table_transformer=sweep_create_table_format)
        g.custom_command('submit', 'submit_sweep', table_transformer=sweep_submit_table_format)
        g.custom_command('run', 'run_sweep', table_transformer=sweep_run_table_format)
        g.custom_command('status', 'sweep_status', table_transformer=sweep_status_table_format)
        g.custom_command('resubmit', 'resubmit_sweep', table_transformer=sweep_resubmit_table_format)
        g.custom_command('metrics', 'sweep_metrics', table_transformer=sweep_metrics_table_format)
        # supports_no_wait: without it az drops the function's no_wait argument, and --no-wait does not exist.
        g.custom_command('delete', 'delete_sweep_jobs', table_transformer=sweep_delete_table_format,
                         confirmation=DELETE_CONFIRMATION, supports_no_wait=True)
        g.custom_command('download', 'download_sweep_outputs', table_transformer=sweep_download_table_format)
        g.custom_command('stop', 'stop_sweep', table_transformer=sweep_stop_table_format,
                         confirmation=STOP_CONFIRMATION, supports_no_wait=True)
        g.custom_command('report', 'sweep_report', table_transformer=sweep_report_table_format)

    with self.command_group('batchai sweep local', is_preview=True) as g:
        g.custom_command('start', 'local_start', table_transformer=local_service_table_format)
        g.custom_command('status', 'local_status', table_transformer=local_service_table_format)
        g.custom_command('stop', 'local_stop', table_transformer=local_service_table_format)
        g.custom_command('show-connection-string', 'local_show_connection_string')
