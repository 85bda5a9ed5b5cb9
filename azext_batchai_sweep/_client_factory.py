# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Clients for the commands that talk to Batch AI (submit, status, ...).

`create` works offline and needs none. The SDK import stays inside the function so that loading the command
table never imports azure.mgmt.batchai.
"""


def cf_batchai(cli_ctx, *_):
    from azure.cli.core.commands.client_factory import get_mgmt_service_client
    from azure.mgmt.batchai import BatchAIManagementClient
    return get_mgmt_service_client(cli_ctx, BatchAIManagementClient)
