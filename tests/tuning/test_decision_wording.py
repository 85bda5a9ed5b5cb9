"""How Hyperband and ASHA word their decisions (issue 42, item 10): a value tied with the cutoff is written "=" (a tie
goes to the earlier slot), not "<"; with goal min a worse value is ">" the cutoff; ASHA's decisions of one poll are
printed in the order they were taken (by step, then job), as Hyperband's are."""
from azext_batchai_sweep.core.spec.params import DiscreteParamSpec
from azext_batchai_sweep.core.tuning.decision import NOT_PROMOTED
from azext_batchai_sweep.core.tuning.samplers import HyperbandSampler
from azext_batchai_sweep.core.tuning.trial import Report, Trial

SPEC = DiscreteParamSpec(parameterName='C', values=list(range(100)))


def _first_rung(goal, score):
    sampler = HyperbandSampler([SPEC], goal, 1, 3, 3, seed=3, resource='EPOCHS')
    first = [s for s in sampler.suggest([], 100) if s.rung == 0 and s.resource == 1]
    trials = [Trial(name='j{}'.format(i), index=i, params=s.params, state='succeeded', resource=s.resource,
                    bracket=s.bracket, rung=s.rung, slot=s.slot, reports=(Report(step=1.0, value=score(i)),))
              for i, s in enumerate(first)]
    return sampler.explain(trials), trials


def test_a_tie_with_the_cutoff_is_written_as_a_tie():
    # three configurations at EPOCHS 1, the best one goes on: two tie for it
    explained, trials = _first_rung('max', lambda i: [0.5, 0.5, 0.2][i])
    dropped = [d for d in explained.values() if d.kind == NOT_PROMOTED]
    tied = next(d for d in dropped if d.numbers['value'] == 0.5)
    assert '(0.5 = 0.5; a tie goes to the earlier slot)' in tied.text, tied.text
    worse = next(d for d in dropped if d.numbers['value'] == 0.2)
    assert '(0.2 < 0.5)' in worse.text, worse.text
    assert len(trials) == 3


def test_with_goal_min_a_worse_value_is_greater():
    explained, _ = _first_rung('min', lambda i: [0.1, 0.4, 0.3][i])
    texts = sorted(d.text for d in explained.values() if d.kind == NOT_PROMOTED)
    assert any('(0.4 > 0.1)' in text for text in texts) and any('(0.3 > 0.1)' in text for text in texts), texts
    assert not any(' < ' in text for text in texts)


def test_asha_lines_come_in_the_order_the_rules_took_them():
    from azext_batchai_sweep.core.tuning.controller import Controller
    from azext_batchai_sweep.core.tuning.loop import decision_lines
    from azext_batchai_sweep.core.tuning.policies import make_policy
    from azext_batchai_sweep.core.tuning.samplers import GridSampler

    def job(name, values, state='running'):
        return Trial(name=name, index=ord(name), params={'C': 1}, state=state,
                     reports=tuple(Report(step=float(i + 1), value=v) for i, v in enumerate(values)))
    policy = make_policy({'policy': 'asha', 'minResource': 1, 'maxResource': 9, 'eta': 3}, 'max', 'epoch')
    done = [job('a', [0.5, 0.6, 0.7], 'succeeded'), job('b', [0.9, 0.2, 0.95], 'succeeded')]
    # c's log, read in one poll: the best at epoch 1 (let go on past rung 0), the worst at epoch 3 (stopped at rung 1)
    late = job('c', [0.95, 0.3, 0.1])
    controller = Controller(GridSampler([SPEC]), policy, goal='max')
    lines = decision_lines(controller.step(done + [late]))
    assert [line.split(': ', 1)[1].split(' by asha')[0] for line in lines] == [
        'promoted past rung 0 (epoch 1)', 'stopped at epoch 3'], lines
