"""Early-termination policies, one module each; ``make_policy`` builds one from a sweep file's earlyTermination."""
from .asha import AshaPolicy
from .bandit import BanditPolicy
from .median import MedianPolicy
from .truncation import TruncationPolicy

POLICIES = ('bandit', 'median', 'truncation', 'asha')


def make_policy(settings, goal, step_label='step'):
    """The policy of an earlyTermination section (already validated), or None without one."""
    if not settings:
        return None
    common = {'evaluation_interval': settings.get('evaluationInterval', 1),
              'delay_evaluation': settings.get('delayEvaluation', 0), 'step_label': step_label}
    kind = settings['policy']
    if kind == 'bandit':
        return BanditPolicy(goal, slack_factor=settings.get('slackFactor'), slack_amount=settings.get('slackAmount'),
                            **common)
    if kind == 'median':
        return MedianPolicy(goal, **common)
    if kind == 'truncation':
        return TruncationPolicy(goal, settings['truncationPercentage'], **common)
    if kind == 'asha':
        return AshaPolicy(goal, settings['minResource'], settings['maxResource'], settings.get('eta', 3), **common)
    raise ValueError('unknown policy {!r}'.format(kind))
