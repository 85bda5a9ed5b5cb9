"""ParameterSweep: grid and random search over parameter specifications, expanded lazily into jobs.

``generate_jobs`` and ``generate_jobs_random_search`` return a :class:`JobSequence`: its ``len()`` is known before
anything is generated and iterating it renders one :class:`SweepJob` at a time, so a 10^6-job grid can be counted and
streamed (to a plan file, say) without holding 10^6 jobs. Unlike the old library, whose lists held
JobCreateParameters objects, each item is a SweepJob whose ``.body`` is the JobCreateParameters (or dict).

Random search is reproducible: the generator is ``random.Random(seed)``, and when no seed is given one is drawn from
os.urandom and exposed as ``.seed`` on the result (the old library used the unseeded global generator, so a random
sweep could never be replayed). A parameter set is never drawn twice, since job names derive from the values.
"""
import itertools
import logging
import os
import random

from ..errors import SpecError, SweepError
from .naming import canonical_json, name_from_digest, sanitize_prefix, sweep_salt, values_digest
from .substitution import CompiledTemplate, Placeholder, placeholder_names

logger = logging.getLogger(__name__)

MIN_REDRAWS = 1000


def redraw_limit(space_size):
    """Draws allowed per job of a random search before giving up; deterministic for a given seed.

    A finite space gets ten times its size, so that drawing nearly all of it (the coupon collector's problem) still
    succeeds; a continuous one (None) practically never repeats, so MIN_REDRAWS is plenty.
    """
    return MIN_REDRAWS if space_size is None else max(MIN_REDRAWS, 10 * space_size)


class SweepJob:
    """One generated job.

    ``name`` (None without a prefix), ``parameters`` (dict, in spec order), ``body`` (rendered on first access: a
    model of the template's class, or a dict) and ``body_json()`` (the body as JSON, without building it).
    """

    __slots__ = ('index', 'name', 'parameters', 'parameters_json', '_template', '_body')

    def __init__(self, index, name, parameters, parameters_json, template):
        self.index, self.name, self.parameters, self.parameters_json = index, name, parameters, parameters_json
        self._template = template
        self._body = None

    @property
    def body(self):
        if self._body is None:
            self._body = self._template.render(self.parameters, self.parameters_json)
        return self._body

    def body_json(self):
        """The job body as a JSON string (the REST form for a model template), e.g. for a plan file."""
        return self._template.render_json(self.parameters, self.parameters_json)

    def __repr__(self):
        return 'SweepJob(index={}, name={!r}, parameters={!r})'.format(self.index, self.name, self.parameters)


class JobSequence:
    """The jobs of a sweep: ``len()``, iteration (re-startable, same jobs each time) and indexing.

    ``seed`` is the random search's seed (None for a grid); ``template`` the compiled template; ``unused_parameters``
    the parameters no placeholder of the template uses (they still reach the job as ``PARAM_*`` variables).
    """

    def __init__(self, count, combinations, template, prefix, seed=None, at=None):
        self._count, self._combinations, self._at = count, combinations, at
        self.template, self.prefix, self.seed = template, prefix, seed

    def __len__(self):
        return self._count

    def __iter__(self):
        for index, (values, params_json, digest) in enumerate(self._combinations()):
            yield self._job(index, values, params_json, digest)

    def __getitem__(self, index):
        if not isinstance(index, int):
            raise TypeError('job indices must be integers')
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError('job index out of range')
        if self._at is not None:
            return self._job(index, *self._at(index))
        # A random search can only be replayed from its start.
        return next(itertools.islice(iter(self), index, None))

    def _job(self, index, values, params_json, digest):
        name = name_from_digest(self.prefix, digest) if self.prefix else None
        return SweepJob(index, name, values, params_json, self.template)


def _keyed(names, combination, salt=''):
    values = dict(zip(names, combination))
    params_json = canonical_json(values)
    return values, params_json, values_digest(params_json, salt)


class ParameterSweep:
    """A set of parameter specifications; ``parameters['X']`` gives the placeholder of parameter X.

    :param param_spec_list: the specifications (NumParamSpec, DiscreteParamSpec, DictParamSpec, FileParamSpec);
        names must be unique. The grid is their cartesian product, in this order (the first varies slowest).
    """

    def __init__(self, param_spec_list):
        specs = list(param_spec_list)
        if not specs:
            raise SpecError('a sweep needs at least one parameter', path='parameters')
        seen = set()
        for i, spec in enumerate(specs):
            if spec.name in seen:
                raise SpecError('parameter name {!r} is used twice'.format(spec.name),
                                path='parameters[{}].parameterName'.format(i))
            seen.add(spec.name)
        self.specs = specs
        self.names = [spec.name for spec in specs]
        self._by_name = {spec.name: spec for spec in specs}

    def __getitem__(self, name):
        spec = self._by_name.get(name)
        if spec is None:
            raise SpecError('unknown parameter {!r} (parameters: {})'.format(name, ', '.join(self.names)))
        return Placeholder(name, keys=spec.keys)

    def grid_size(self):
        """The number of jobs of the grid search (lists file parameters' storage, once)."""
        size = 1
        for spec in self.specs:
            size *= spec.count()
        return size

    def unused_parameters(self, jcp):
        """The parameters that no placeholder of the template `jcp` uses."""
        used = set(placeholder_names(jcp))
        return [name for name in self.names if name not in used]

    def generate_jobs(self, jcp, job_name_prefix=None, sweep_name=None, environment=None):
        """The grid search: one job per combination of the parameters' values, lazily.

        :param jcp: the job template, a JobCreateParameters (any msrest model) or a job definition dict.
        :param job_name_prefix: when given, each job gets ``.name`` = ``<prefix>-<hash of its values>``.
        :param sweep_name: set as the ``BATCHAI_SWEEP_NAME`` environment variable of each job, and hashed into
            its name (two sweeps never share a job).
        :param environment: more environment variables every job gets, ``{name: text}`` (e.g. the sweep's seed).
        :return: a :class:`JobSequence`.
        """
        template, prefix = self._prepare(jcp, job_name_prefix, sweep_name, environment)
        salt = sweep_salt(sweep_name)
        # Counted before anything is listed: a grid too large for --max-jobs is refused without building it.
        count = self.grid_size()
        listed = []

        def grids():
            if not listed:
                listed.extend(spec.values() for spec in self.specs)
            return listed

        def combinations():
            for combination in itertools.product(*grids()):
                yield _keyed(self.names, combination, salt)

        def at(index):
            # Mixed-radix digits of the index, the last parameter varying fastest (as in itertools.product).
            combination = []
            for grid in reversed(grids()):
                index, digit = divmod(index, len(grid))
                combination.append(grid[digit])
            return _keyed(self.names, reversed(combination), salt)
        return JobSequence(count, combinations, template, prefix, at=at)

    def generate_jobs_random_search(self, jcp, num_jobs, seed=None, job_name_prefix=None, sweep_name=None,
                                    environment=None):
        """The random search: `num_jobs` jobs, each parameter drawn independently, no parameter set twice.

        LINEAR and RANDOM_UNIFORM numbers are drawn uniformly, LOG log-uniformly, INTEGER as integers; discrete,
        dict and file parameters by uniform choice.

        :param jcp: the job template, a JobCreateParameters (any msrest model) or a job definition dict.
        :param num_jobs: how many jobs, at least 1 and at most the number of distinct parameter sets.
        :param seed: the seed of ``random.Random``; when None one is drawn from os.urandom (see ``.seed``).
        :param job_name_prefix: when given, each job gets ``.name`` = ``<prefix>-<hash of its values>``.
        :param sweep_name: set as the ``BATCHAI_SWEEP_NAME`` environment variable of each job, and hashed into
            its name (two sweeps never share a job).
        :param environment: more environment variables every job gets, ``{name: text}`` (e.g. the sweep's seed).
        :return: a :class:`JobSequence` whose ``.seed`` reproduces it.
        """
        if not isinstance(num_jobs, int) or isinstance(num_jobs, bool) or num_jobs < 1:
            raise SpecError('the number of jobs must be an integer of at least 1, not {!r}'.format(num_jobs))
        template, prefix = self._prepare(jcp, job_name_prefix, sweep_name, environment)
        salt = sweep_salt(sweep_name)
        space = self._space_size()
        if space is not None and num_jobs > space:
            raise SpecError('a random search of {} jobs needs as many distinct parameter sets, but the parameters '
                            'allow only {}'.format(num_jobs, space))
        if seed is None:
            seed = int.from_bytes(os.urandom(8), 'big')
        logger.info('random search seed: %d', seed)
        redraws = redraw_limit(space)

        def combinations():
            rng = random.Random(seed)
            seen = set()
            for _ in range(num_jobs):
                for _ in range(redraws):
                    keyed = _keyed(self.names, [spec.sample(rng) for spec in self.specs], salt)
                    if keyed[2] not in seen:
                        break
                else:
                    raise SweepError('random search (seed {}): no new parameter set in {} draws after {} jobs; ask '
                                     'for fewer jobs or widen the parameters'.format(seed, redraws, len(seen)))
                seen.add(keyed[2])
                yield keyed
        return JobSequence(num_jobs, combinations, template, prefix, seed=seed)

    def _prepare(self, jcp, job_name_prefix, sweep_name, environment=None):
        template = CompiledTemplate(jcp, self.specs, sweep_name=sweep_name, environment=environment)
        prefix = sanitize_prefix(job_name_prefix) if job_name_prefix is not None else None
        return template, prefix

    def _space_size(self):
        size = 1
        for spec in self.specs:
            count = spec.space_size()
            if count is None:
                return None
            size *= count
        return size
