# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The Batch AI client of the commands that talk to a service; see _targeting.py for which service that is.

The SDK import stays inside the function so that loading the command table never imports azure.mgmt.batchai.
"""


def cf_batchai(cli_ctx, *_):
    from ._targeting import batchai_client
    return batchai_client(cli_ctx)
