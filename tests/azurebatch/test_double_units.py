"""Units of the Batch double (TEST CODE for test code): the autoscale formula evaluator and the OData filter, the
parts whose mistakes would make the scheduler's tests pass or fail for the wrong reason."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.azurebatch.double.formula import SAMPLE_SECONDS, FormulaError, evaluate, results_text
from tests.azurebatch.double.odata import ODataError, compile_filter, select

# The scheduler's formula shape (azurebatch/pools.py AUTOSCALE_GRAMMAR), written out here as data.
SHAPE = ('$samples = $PendingTasks.GetSamplePercent(TimeInterval_Minute * 5);\n'
         '$tasks = $samples < 70 ? max(0, $PendingTasks.GetSample(1)) : '
         'max($PendingTasks.GetSample(TimeInterval_Minute * 5));\n'
         '$nodes = $samples < 70 ? max({initial}, $tasks) : $tasks;\n'
         '{target} = min({max}, max({min}, $nodes));\n'
         '{other} = 0;\n'
         '$NodeDeallocationOption = taskcompletion;')
WINDOW = 5 * 60 // SAMPLE_SECONDS  # the samples a full 5-minute window holds


def shape(min_nodes, max_nodes, initial, spot=False):
    target, other = '$TargetDedicatedNodes', '$TargetLowPriorityNodes'
    if spot:
        target, other = other, target
    return SHAPE.format(min=min_nodes, max=max_nodes, initial=initial, target=target, other=other)


def run(formula, samples):
    return evaluate(formula, {'$PendingTasks': samples, '$ActiveTasks': samples, '$RunningTasks': [0] * len(samples),
                              '$CurrentDedicatedNodes': 0, '$CurrentLowPriorityNodes': 0,
                              '$TargetDedicatedNodes': 0, '$TargetLowPriorityNodes': 0})


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 3), st.integers(0, 6), st.integers(0, 6), st.booleans(),
       st.lists(st.integers(0, 12), min_size=0, max_size=2 * WINDOW))
def test_the_scheduler_formula_shape_means_what_batch_means(low, extra, initial, spot, samples):
    high = low + extra
    result = run(shape(low, high, min(initial, high), spot), samples)
    nodes, other = ((result['targetLowPriority'], result['targetDedicated']) if spot
                    else (result['targetDedicated'], result['targetLowPriority']))
    assert other == 0 and result['deallocation'] == 'taskcompletion'
    if len(samples) * 100 < 70 * WINDOW:  # a new pool: the last sample, at least the initial count
        expected = max(min(initial, high), samples[-1] if samples else 0)
    else:  # the largest sample of the window
        expected = max(samples[-WINDOW:])
    assert nodes == min(high, max(low, expected))


def test_evaluation_details():
    formula = shape(0, 4, 1)
    assert run(formula, [])['targetDedicated'] == 1  # a new pool starts at the initial count
    assert run(formula, [0] * WINDOW)['targetDedicated'] == 0  # idle for the window -> 0
    assert run(formula, [0] * (WINDOW - 1) + [2])['targetDedicated'] == 2
    assert run(formula, [9] * WINDOW)['targetDedicated'] == 4  # capped at max
    text = results_text(run(formula, [3] * WINDOW)['variables'])
    assert text == ('$TargetDedicatedNodes=3;$TargetLowPriorityNodes=0;$NodeDeallocationOption=taskcompletion;'
                    '$samples=100;$tasks=3;$nodes=3')
    # Batch's own example shapes: arithmetic, comparisons, an untaken branch is not evaluated.
    assert evaluate('$TargetDedicatedNodes = (2 + 3) * 2 / 5 - 1;', {})['targetDedicated'] == 1
    assert evaluate('$x = 1 < 2 && !(3 == 4); $TargetDedicatedNodes = $x ? 7 : $undefined;',
                    {})['targetDedicated'] == 7
    assert evaluate('$TargetLowPriorityNodes = -3;', {})['targetLowPriority'] == 0  # never negative
    assert evaluate('$TargetDedicatedNodes = 2.9;', {})['deallocation'] == 'requeue'  # Batch's default option


@pytest.mark.parametrize('formula, code', [
    ('$TargetDedicatedNodes = ;', 'InvalidAutoScaleFormula'),
    ('TargetDedicatedNodes = 1;', 'InvalidAutoScaleFormula'),
    ('$TargetDedicatedNodes = 1 +;', 'InvalidAutoScaleFormula'),
    ('$TargetDedicatedNodes = $Nothing;', 'AutoScaleFormulaEvaluationError'),
    ('$TargetDedicatedNodes = max($PendingTasks.GetSample(TimeInterval_Minute * 5));',
     'AutoScaleFormulaEvaluationError'),
    ('$NodeDeallocationOption = 2;', 'InvalidAutoScaleFormula'),
])
def test_formula_errors(formula, code):
    with pytest.raises(FormulaError) as error:
        evaluate(formula, {'$PendingTasks': []})
    assert error.value.code == code


def test_odata_filter_and_select():
    allowed = {'id', 'state', 'stateTransitionTime', 'executionInfo/exitCode'}
    keep = compile_filter("(state eq 'running' or state eq 'completed') and "
                          "stateTransitionTime ge datetime'2024-01-01T00:00:00Z' and startswith(id,'sw-')", allowed)
    assert keep({'id': 'sw-1', 'state': 'running', 'stateTransitionTime': '2024-02-01T00:00:00.1234567Z'})
    assert not keep({'id': 'sw-1', 'state': 'active', 'stateTransitionTime': '2024-02-01T00:00:00Z'})
    assert not keep({'id': 'sw-1', 'state': 'running', 'stateTransitionTime': '2023-12-31T23:59:59Z'})
    assert not keep({'id': 'x-1', 'state': 'running', 'stateTransitionTime': '2024-02-01T00:00:00Z'})
    assert compile_filter('not (executionInfo/exitCode eq 0)', allowed)({'executionInfo': {'exitCode': 2}})
    assert compile_filter("id eq 'it''s'", allowed)({'id': "it's"})
    for bad in ("vmSize eq 'x'", "state eq", "state eq 'a' xor state eq 'b'", "startswith(id 'a')"):
        with pytest.raises(ODataError):
            compile_filter(bad, allowed)
    assert select({'id': 1, 'state': 2, 'executionInfo': {'a': 1}}, 'id, executionInfo/exitCode') == {
        'id': 1, 'executionInfo': {'a': 1}}
