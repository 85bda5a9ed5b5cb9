"""The real Batch service's spellings where they differ from the spec (TEST CODE): what the double answers by
default (`account.quirks`, True unless a test turns it off), each from a recorded answer
(tests/azurebatch/recorded/; the table of docs/azure-batch-double.md lists them with their sources).

`as_recorded(answer)` re-spells a JSON answer the double's handlers build in the spec's spelling:
- the spec's lowercase enum values the service answers capitalised: a task add result's `status` (`Success`;
  `ClientError`, `ServerError` by the same rule), `taskSchedulingPolicy.nodeFillType` (`Spread`),
  `nodePlacementConfiguration.policy` (`Zonal`), `failureInfo.category` (`UserError`);
- a pool's and a node's `vmSize` lower-cased, whatever the case of the pool add (`STANDARD_D2S_V3` answered
  `standard_d2s_v3`).
Values the recordings show lowercase stay so (task and node states, `result`, `allocationState`, `osType`...).
The pool's users without password and the task file headers are answered as recorded by entities.py and api.py.
Times are written as the service writes them by entities.iso (seven fractional digits, trailing zeros trimmed).
"""

CAPITALISED = {'success': 'Success', 'clienterror': 'ClientError', 'servererror': 'ServerError',
               'spread': 'Spread', 'pack': 'Pack', 'regional': 'Regional', 'zonal': 'Zonal',
               'usererror': 'UserError'}


def _capital(value):
    return CAPITALISED.get(value, value) if isinstance(value, str) else value


def as_recorded(answer, parent=None):
    """`answer` (JSON) as the real service spells it (a new object; the argument is not changed)."""
    if isinstance(answer, list):
        return [as_recorded(item, parent) for item in answer]
    if not isinstance(answer, dict):
        return answer
    out = {}
    for key, value in answer.items():
        if key == 'vmSize' and isinstance(value, str):
            value = value.lower()
        elif key == 'nodeFillType' or (key == 'policy' and parent == 'nodePlacementConfiguration') or \
                (key == 'category' and parent == 'failureInfo') or (key == 'status' and 'taskId' in answer):
            value = _capital(value)
        else:
            value = as_recorded(value, key)
        out[key] = value
    return out
