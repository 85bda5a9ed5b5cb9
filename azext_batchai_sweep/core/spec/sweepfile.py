"""Sweep files: load, validate and resolve a sweep (YAML or JSON) into a :class:`SweepDefinition`.

    jobNamePrefix: lr
    sampling: {type: random, count: 16, seed: 7}        # or {type: grid}
    parameters:
      - {name: LEARNING_RATE, type: numeric, dataType: REAL, start: 1e-4, end: 1e-1, numValues: 4, scale: LOG}
      - {name: DEVICE_ID, type: discrete, values: [Device_1, Device_2]}
    job: job.json    # relative to this file; or inline, {"properties": {...}} or the properties alone

Every error is a SpecError naming the file, the field path and what was expected there. The order of checks:
the file against sweep.schema.json, the parameter specs (core/spec/params.py), then the job template against the Batch
AI job schema, after each `{{NAME}}` placeholder is replaced by a sample value of its parameter (so that
`nodeCount: "{{NODES}}"` passes as the integer it will be).
"""
import copy
import hashlib
import json
import logging
import os
import random
import re
from dataclasses import dataclass, field

import yaml

from ..errors import SpecError
from ..service.identity import SWEEP_SEED_VAR
from .job_paths import prefix_problem
from .document_limits import (MAX_DOCUMENT_BYTES, check_json_value, check_number_text, check_text_depth,
                              check_yaml_node, too_large)
from .params import DictParamSpec, DiscreteParamSpec, FileParamSpec, NumParamSpec, MOUNT_ROOTS
from .plan import literal_secrets
from .schema_validation import SchemaValidator, format_path
from .substitution import PLACEHOLDER_PATTERN, CompiledTemplate
from .sweep import ParameterSweep
from ..tuning.bayesian_settings import BAYESIAN, resolve_bayesian, resolve_hyperband_sampler
from ..tuning.settings import check_tuning, wall_clock
from ..tuning.objectives_settings import check_objectives

logger = logging.getLogger(__name__)

SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'schemas')
STORAGE_ACCOUNT_ENV = 'AZURE_BATCHAI_STORAGE_ACCOUNT'
STORAGE_ACCOUNT_PLACEHOLDER = '<{}>'.format(STORAGE_ACCOUNT_ENV)
# Credentials have no place in a file that gets shared and committed: core/spec/storage.py reads them from these.
CREDENTIAL_FIELDS = ('storageAccountKey', 'connectionString', 'sasToken')
CREDENTIAL_HELP = ('storage credentials never go in the sweep file: set AZURE_STORAGE_KEY, '
                   'AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_SAS_TOKEN in the environment instead')
_AZURE_FILE_URL = re.compile(r'^https?://([^./]+)\.file\.')


class _Loader(getattr(yaml, 'CSafeLoader', yaml.SafeLoader)):  # pylint: disable=too-many-ancestors
    """YAML 1.1 reads `1e-4` as a string (its floats need a dot); sweep files are full of such numbers.

    libyaml's parser when PyYAML has it (six times faster to compose a large document, which the size checks do
    before anything else), the pure-Python one otherwise; both are safe loaders.
    """


# YAML 1.2's float syntax, added after the 1.1 resolvers, so it only decides what they left as a string.
_Loader.add_implicit_resolver(
    'tag:yaml.org,2002:float',
    re.compile(r'^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$'),
    list('-+0123456789'))


@dataclass
class SweepDefinition:  # pylint: disable=too-many-instance-attributes
    """A validated sweep.

    :ivar source: the sweep file's path.
    :ivar job_name_prefix: the file's jobNamePrefix, or None (the command uses the sweep name).
    :ivar sampling: ``{"type": "grid"|"random", "count": int|None, "seed": int|None}``; the seed is set whenever
        anything is drawn at random (a random search or a RANDOM_UNIFORM grid), chosen here if nobody gave one.
    :ivar parameters: the parameter specs (core/spec/params.py objects), in file order.
    :ivar parameter_summaries: the parameters as written in the file (plan headers list them).
    :ivar template: the job template, the Batch AI job *properties* (placeholders still in it).
    :ivar unused_parameters: the parameters no placeholder uses (they still reach the job as PARAM_<NAME>).
    :ivar seed_origin: how the seed was set: 'given' (file or --seed), 'recorded' (an earlier plan of the sweep),
        'drawn' (new), or None when nothing is drawn.
    :ivar objective: the file's objective section (how to read the metric; core/tuning), or None.
    :ivar limits: the file's limits section (a dict, maybe empty).
    :ivar early_termination: the file's earlyTermination section, or None (only `sweep run` accepts one).
    :ivar objective_set: the file's objectives and constraints ({'objectives': [...], 'constraints': [...]}, either
        absent; core/tuning/objectives.py), or None; with objectives, ``objective`` is the first of them.
    :ivar resource_spec: for hyperband sampling, a spec standing for the resource placeholder (its possible values),
        so that the template renders with it; else None.
    :ivar warm_start_files: {sampling.warmStart entry: [warmstart.Record]} of the entries that are results files,
        read and checked with the file (the sweeps named there are read from the service by `sweep run`).
    :ivar inherited: the jobs a warm start inherited (core/tuning/warmstart.py), once `sweep run` has matched them.
    """
    source: str
    job_name_prefix: str
    sampling: dict
    parameters: list
    parameter_summaries: list
    template: dict
    unused_parameters: list = field(default_factory=list)
    seed_origin: str = None
    objective: dict = None
    limits: dict = field(default_factory=dict)
    early_termination: dict = None
    resource_spec: object = None
    warm_start_files: dict = field(default_factory=dict)
    inherited: list = field(default_factory=list)
    objective_set: dict = None
    code: str = None  # the file's `code:` folder, resolved against the sweep file's folder (core/code)

    @property
    def template_digest(self):
        """16 hex characters of the SHA-256 of the resolved template (cluster and storage account filled in)."""
        text = json.dumps(self.template, sort_keys=True, separators=(',', ':'))
        return hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]

    def jobs(self, sweep_name=None, job_name_prefix=None):
        """The sweep's jobs, lazily (a core.spec.sweep.JobSequence): `len()` first, then one job at a time.

        Each job's ``body_json()`` is a Batch AI job create body, ``{"properties": {...}}``.
        """
        prefix = job_name_prefix or self.job_name_prefix or sweep_name
        sweep = ParameterSweep(self.parameters)
        body = {'properties': self.template}
        # The seed goes into every job, so that the sweep can be planned again from the service alone.
        environment = {SWEEP_SEED_VAR: str(self.sampling['seed'])} if self.sampling['seed'] is not None else None
        try:
            if self.sampling['type'] == 'random':
                return sweep.generate_jobs_random_search(body, self.sampling['count'], seed=self.sampling['seed'],
                                                         job_name_prefix=prefix, sweep_name=sweep_name,
                                                         environment=environment)
            return sweep.generate_jobs(body, job_name_prefix=prefix, sweep_name=sweep_name, environment=environment)
        except SpecError as ex:
            if ex.path is None and self.sampling['type'] == 'random':
                ex.path = 'sampling.count'  # the only sweep-wide check of a random search: enough distinct sets
            raise ex.within(source=self.source) from None


def load_sweep_file(path, *, template_path=None, sampling=None, count=None, seed=None, storage_account_name=None,
                    cluster_id=None, file_storage=None, recorded_seed=None, adaptive=False, max_total_jobs=None):
    """Load, validate and resolve a sweep file.

    :param path: the sweep file, YAML or JSON.
    :param template_path: a job.json to use instead of the file's `job`.
    :param sampling: "grid" or "random", overriding the file's sampling.type.
    :param count: jobs of a random search, overriding sampling.count.
    :param seed: the random seed, overriding sampling.seed.
    :param storage_account_name: replaces <AZURE_BATCHAI_STORAGE_ACCOUNT> in the template; defaults to the
        AZURE_BATCHAI_STORAGE_ACCOUNT environment variable.
    :param cluster_id: the cluster's resource id, set as the job's cluster.id.
    :param file_storage: called with each file parameter as written (a dict), returns extra FileParamSpec keyword
        arguments (such as accountUrl and storageAccountKey of a local service); credentials cannot be in the file.
    :param recorded_seed: called (without arguments) only when the sweep draws at random and neither the file nor
        `seed` gives a seed: the seed an earlier plan of this sweep recorded, or None to draw a new one.
    :param adaptive: True for `sweep run`, which honours earlyTermination, limits and Hyperband sampling; create and
        submit refuse them (core/tuning/settings.py).
    :param max_total_jobs: `sweep run`'s --max-total-jobs, which bounds a bayesian search as limits.maxTotalJobs does.
    :raises SpecError: naming the file, the field and what was expected.
    """
    document = _read_document(path)
    _refuse_credentials(document, path)
    _validate(document, 'sweep.schema.json', path)
    resolved_sampling = resolve_sampling(document.get('sampling') or {'type': 'grid'}, sampling, count, seed, path)
    seed_origin = _choose_seed(resolved_sampling, document['parameters'], recorded_seed)
    specs = [_spec(entry, index, resolved_sampling, path, file_storage)
             for index, entry in enumerate(document['parameters'])]
    names = [spec.name for spec in specs]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise SpecError('expected a name not used by another parameter', source=path,
                            path='parameters[{}].name'.format(index))
    for index, spec in enumerate(specs):
        _check_values(spec, index, resolved_sampling['type'], path)
    objective_set = check_objectives(document, path, adaptive)
    objective, limits, early_termination = check_tuning(document, resolved_sampling, path, adaptive,
                                                          max_total_jobs)
    resource_spec = _resource_spec(resolved_sampling, names, path)

    template, locate = _template(document, path, template_path)
    if limits.get('jobTimeoutMinutes') is not None:
        template.setdefault('constraints', {})['maxWallClockTime'] = wall_clock(limits['jobTimeoutMinutes'])
    template = _fill_storage_account(template, storage_account_name, locate)
    if cluster_id:
        template['cluster'] = {'id': cluster_id}
    elif 'cluster' not in template:
        logger.warning('The job template has no cluster: give one (--cluster) before submitting the sweep.')
    unused = _check_template(template, specs + ([resource_spec] if resource_spec else []), locate,
                             seed=resolved_sampling['seed'])
    if resource_spec is not None:
        if resource_spec.name in unused:
            raise SpecError('expected a {{{{{0}}}}} placeholder in the job for the resource {0}: the controller fills '
                            'it with each job\'s resource (epochs, say)'.format(resource_spec.name), source=path,
                            path='sampling.resource')
    for name in unused:
        logger.warning('Parameter %s is not used by any {{%s}} placeholder of the job: it still varies the jobs '
                       'only through the PARAM_%s environment variable.', name, name, name)
    return SweepDefinition(source=path, job_name_prefix=document.get('jobNamePrefix'), sampling=resolved_sampling,
                           parameters=specs, parameter_summaries=document['parameters'], template=template,
                           unused_parameters=unused, seed_origin=seed_origin, objective=objective, limits=limits,
                           early_termination=early_termination, resource_spec=resource_spec,
                           warm_start_files=_warm_start_files(resolved_sampling, path),
                           objective_set=objective_set, code=_code_folder(document, path))


def _code_folder(document, path):
    """The sweep file's `code:` folder, relative to the sweep file's folder; None without one."""
    folder = document.get('code')
    if not folder:
        return None
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), folder))


def _warm_start_files(sampling, path):
    """The warmStart entries that are results files, read and checked now: a bad one fails before any request."""
    from ..tuning.warmstart import file_path, is_file_source, read_results_file
    files = {}
    for index, entry in enumerate(sampling.get('warmStart') or ()):
        where = 'sampling.warmStart[{}]'.format(index)
        if entry in sampling['warmStart'][:index]:
            raise SpecError('expected each warm-start source once ({} is given twice)'.format(entry), source=path,
                            path=where)
        if is_file_source(entry):
            try:
                files[entry] = read_results_file(file_path(entry, path), where)
            except SpecError as ex:
                raise SpecError(ex.message, source=path, path=where) from None
    return files


def _load_yaml(text, what, path):
    """Compose the YAML, check its limits, then build it (a SafeLoader: no Python objects from the file)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_yaml_node(node, what, path)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _load_json(text, what, path):
    def number(kind):
        def parse(token):
            check_number_text(token, what, path)
            return kind(token)
        return parse
    try:
        document = json.loads(text, parse_int=number(int), parse_float=number(float))
    except ValueError as ex:
        raise SpecError('expected valid JSON ({})'.format(ex), source=path) from None
    check_json_value(document, what, path)
    return document


def _read_document(path, what='sweep file'):
    from .bounded_read import TooLarge, read_regular_file
    try:
        # Regular files only, never more than the limit (a FIFO or /dev/zero never hangs the check): in bytes, so
        # the text has no more characters.
        text = read_regular_file(path, MAX_DOCUMENT_BYTES).decode('utf-8')
    except TooLarge:
        raise SpecError(too_large(what, 'the file is larger'), source=path) from None
    except OSError as ex:
        raise SpecError('expected a readable {} ({})'.format(what, ex.strerror or ex), source=path) from None
    except ValueError as ex:  # not UTF-8
        raise SpecError('expected a {} in UTF-8 ({})'.format(what, ex), source=path) from None
    # Before any parser: whatever nesting limit a parser release has of its own, this one is met first.
    check_text_depth(text, what, path)
    try:
        if path.lower().endswith('.json'):
            return _load_json(text, what, path)
        return _load_yaml(text, what, path)
    except RecursionError:
        raise SpecError(too_large(what, 'it nests too deep to read'), source=path) from None
    except yaml.YAMLError as ex:
        mark = getattr(ex, 'problem_mark', None)
        where = 'line {}, column {}'.format(mark.line + 1, mark.column + 1) if mark else None
        raise SpecError('expected valid YAML ({})'.format(getattr(ex, 'problem', None) or ex), source=path,
                        path=where) from None


def _refuse_credentials(node, path, where=()):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CREDENTIAL_FIELDS:
                raise SpecError('expected no {}: {}'.format(key, CREDENTIAL_HELP), source=path,
                                path=format_path(where + (key,)))
            _refuse_credentials(value, path, where + (key,))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            _refuse_credentials(item, path, where + (index,))


def _load_schema(name):
    with open(os.path.join(SCHEMA_DIR, name), encoding='utf-8') as f:
        return json.load(f)


def _validate(document, schema_name, source, locate=None, explain=None):
    issues = SchemaValidator(_load_schema(schema_name)).errors(document)
    if not issues:
        return
    locate = locate or (lambda p: (source, format_path(p)))
    explain = explain or (lambda issue: issue.message)

    def where(issue):
        file, field_path = locate(issue.path)
        return '{}: {}'.format(file, field_path) if field_path else file

    first_source, first_path = locate(issues[0].path)
    message = explain(issues[0])
    if len(issues) > 1:
        message += ''.join('\n  {}: {}'.format(where(issue), explain(issue)) for issue in issues[1:])
    error = SpecError(message, source=first_source, path=first_path or None)
    error.issues = issues
    raise error


def resolve_sampling(written, sampling=None, count=None, seed=None, path=None):
    """A sampling section as written -> as resolved (defaults filled, --sampling/--count/--seed applied)."""
    kind = sampling or written['type']
    resolved = {'type': kind, 'count': None, 'seed': seed if seed is not None else written.get('seed')}
    if kind == 'random':
        resolved['count'] = count if count is not None else written.get('count')
        if resolved['count'] is None:
            raise SpecError('expected the number of jobs of a random search (or a count on the command line)',
                            source=path, path='sampling.count')
    elif kind == BAYESIAN:
        resolve_bayesian(written, count, resolved)
    elif count is not None:
        raise SpecError('expected random sampling for a count of jobs (this sweep samples a {})'.format(kind),
                        source=path, path='sampling.type')
    if kind == 'hyperband':
        resolved.update({key: written[key] for key in ('resource', 'minResource', 'maxResource')},
                        eta=written.get('eta', 3))
        resolve_hyperband_sampler(written, resolved)
    if written.get('warmStart'):
        resolved['warmStart'] = list(written['warmStart'])
    return resolved


def _resource_spec(sampling, names, path):
    """Hyperband's resource placeholder as a discrete spec of its values (it is no parameter of the file)."""
    if sampling['type'] != 'hyperband':
        return None
    from ..tuning.samplers.hyperband import hyperband_brackets
    if sampling['resource'] in names:
        raise SpecError('expected a name that is not a parameter: the controller sets the resource {} of each job '
                        'itself'.format(sampling['resource']), source=path, path='sampling.resource')
    values = sorted({rung.resource for bracket in hyperband_brackets(
        sampling['minResource'], sampling['maxResource'], sampling['eta']) for rung in bracket.rungs})
    return DiscreteParamSpec(parameterName=sampling['resource'], values=values)


def _choose_seed(sampling, entries, recorded_seed=None):
    """Set sampling['seed'] when anything is drawn; returns how it was set: 'given', 'recorded', 'drawn' or None."""
    drawn = sampling['type'] in ('random', 'hyperband', BAYESIAN) or any(entry.get('scale') == 'RANDOM_UNIFORM'
                                                               for entry in entries)
    if not drawn:
        sampling['seed'] = None
        return None
    if sampling['seed'] is not None:
        return 'given'
    # A seed drawn by an earlier plan of this sweep (its plan file or its jobs on the service): a re-plan never
    # draws new values, else it would plan a second sweep beside the first.
    recorded = recorded_seed() if recorded_seed is not None else None
    if recorded is not None:
        sampling['seed'] = recorded
        return 'recorded'
    # Chosen here, reported with the plan: a random sweep without a known seed could never be replayed.
    sampling['seed'] = random.SystemRandom().randrange(2 ** 31)
    return 'drawn'


_SPEC_FIELDS = {
    'numeric': (NumParamSpec, ('start', 'end', 'dataType', 'scale', 'numValues', 'step')),
    'discrete': (DiscreteParamSpec, ('values',)),
    'dict': (DictParamSpec, ('values',)),
    'file': (FileParamSpec, ('storageAccountName', 'storageType', 'mountMethod', 'mountPath', 'container',
                             'fileshare', 'directory', 'filterStr')),
}


def _spec(entry, index, sampling, path, file_storage=None):
    cls, fields = _SPEC_FIELDS[entry['type']]
    kwargs = {key: entry[key] for key in fields if key in entry}
    if entry['type'] == 'file' and file_storage is not None:
        kwargs.update(file_storage(dict(entry)))
    if entry['type'] == 'numeric' and entry['scale'] == 'RANDOM_UNIFORM':
        # One stream per parameter, from the sweep's seed: two such parameters must not draw the same values.
        kwargs['seed'] = '{}/{}'.format(sampling['seed'], entry['name'])
    try:
        return cls(parameterName=entry['name'], **kwargs)
    except SpecError as ex:
        raise _in_parameter(ex, index, path) from None


def _in_parameter(error, index, path):
    # The specs name their fields as the seed README's keyword arguments; the sweep file calls parameterName "name".
    error.path = 'name' if error.path == 'parameterName' else error.path
    return error.within('parameters[{}]'.format(index), source=path)


def _check_values(spec, index, sampling_type, path):
    """Compute what expansion will need now, so that an error points at its parameter (file listing included). A
    grid's values are counted, not listed: a sweep too large for --max-jobs is refused before it costs memory."""
    if sampling_type == 'grid' or isinstance(spec, FileParamSpec):
        try:
            spec.count()
        except SpecError as ex:
            raise _in_parameter(ex, index, path) from None


class _Location:
    """Maps a path inside `{"properties": ...}` to the file and the path as the user wrote the job there."""

    def __init__(self, source, prefix, wrapped):
        self.source, self.prefix, self.wrapped = source, prefix, wrapped

    def __call__(self, where):
        where = tuple(where)
        return self.source, format_path(self.prefix + (where if self.wrapped else where[1:]))

    def text(self, where):
        """The same for a path already written out, such as `properties.nodeCount` (from the substitution)."""
        if not self.wrapped and where and where.startswith('properties'):
            where = where[len('properties'):].lstrip('.')
        if self.prefix:
            where = format_path(self.prefix) + ('.' + where if where and not where.startswith('[') else where or '')
        return where or None


def _template(document, path, template_path):
    """The job properties and their :class:`_Location`."""
    if template_path is not None:
        source, job, prefix = template_path, _read_document(template_path, 'job template'), ()
    elif 'job' in document:
        job = document['job']
        if isinstance(job, str):
            source = os.path.join(os.path.dirname(os.path.abspath(path)), job)
            job, prefix = _read_document(source, 'job template'), ()
        else:
            source, prefix = path, ('job',)
    else:
        raise SpecError('expected a job: a path to a job.json, or the job inline (or a template on the command line)',
                        source=path, path='job')
    if not isinstance(job, dict):
        raise SpecError('expected a job definition (a mapping)', source=source, path=format_path(prefix) or None)
    wrapped = isinstance(job.get('properties'), dict)
    if wrapped:
        extra = sorted(set(job) - {'$schema', 'properties'})
        if extra:
            raise SpecError('expected only $schema and properties next to the job\'s properties', source=source,
                            path=format_path(prefix + (extra[0],)))
    return copy.deepcopy(job['properties'] if wrapped else job), _Location(source, prefix, wrapped)


def _fill_storage_account(template, storage_account_name, locate):
    text = json.dumps(template)
    if STORAGE_ACCOUNT_PLACEHOLDER not in text:
        return template
    name = storage_account_name or os.environ.get(STORAGE_ACCOUNT_ENV)
    if not name:
        source, where = locate(('properties',) + _first_path_with(template, STORAGE_ACCOUNT_PLACEHOLDER))
        raise SpecError('expected a storage account name for {}: give it on the command line '
                        '(--storage-account-name) or in the {} environment variable'.format(STORAGE_ACCOUNT_PLACEHOLDER, STORAGE_ACCOUNT_ENV),
                        source=source, path=where)
    return json.loads(text.replace(STORAGE_ACCOUNT_PLACEHOLDER, name))


def _first_path_with(node, text, where=()):
    if isinstance(node, str):
        return where if text in node else None
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        found = _first_path_with(value, text, where + (key,))
        if found is not None:
            return found
    return None


def _check_template(template, specs, locate, seed=None):
    """Validate the template with sample values in its placeholders; return the parameters no placeholder uses.
    `seed`: the sweep's seed, which every job gets in its environment when set (SweepDefinition.jobs)."""
    for mount in (template.get('mountVolumes') or {}).get('azureFileShares') or ():
        # As `az batchai job create` does: the account is the one of the share's URL.
        match = _AZURE_FILE_URL.match(mount.get('azureFileUrl') or '') if isinstance(mount, dict) else None
        if match and 'accountName' not in mount:
            mount['accountName'] = match.group(1)
    leaked = literal_secrets({'properties': template})
    if leaked:
        source, where = locate(leaked[0])
        raise SpecError('expected a reference like "$env:NAME" to an environment variable holding the secret, '
                        'resolved at submit time: a secret value never goes in a template or a plan', source=source, path=where)
    _check_job_fields(template, locate)
    try:
        # A sample sweep name, so that a template setting BATCHAI_SWEEP_NAME itself is caught here, with its location.
        # The seed's variable as the jobs get it: a template setting it is refused here, not when the jobs are made.
        compiled = CompiledTemplate({'properties': template}, specs, sweep_name='sample',
                                    environment={SWEEP_SEED_VAR: str(seed)} if seed is not None else None)
    except SpecError as ex:
        raise SpecError(ex.message, source=locate.source, path=locate.text(ex.path)) from None
    samples = {spec.name: _sample(spec) for spec in specs}
    rendered = compiled.render(samples, json.dumps(samples))
    for kind in ('azureFileShares', 'azureBlobFileSystems'):
        for mount in (rendered['properties'].get('mountVolumes') or {}).get(kind) or ():
            # The account key is not part of the template: it comes from the environment at submit time. (A mount
            # that is no mapping is left for the schema to refuse.)
            if isinstance(mount, dict):
                mount.setdefault('credentials', {})
    def explain(issue):
        return _with_samples(template, issue.path, issue.message)
    _validate(rendered, 'job.schema.json', None, locate, explain)
    _check_path_prefixes(template, rendered['properties'], locate)
    return [spec.name for spec in specs if spec.name not in compiled.used_names]


def _with_samples(template, path, message):
    """`message` about the field at `path` of the rendered template: the value checked is a sample, so say so when
    the field as written holds a placeholder."""
    written = _value_at({'properties': template}, path)
    if isinstance(written, str) and PLACEHOLDER_PATTERN.search(written):
        return '{} (with the placeholders of {!r} replaced by sample values)'.format(message, written)
    return message


def _check_path_prefixes(template, props, locate):
    """stdOutErrPathPrefix and each output's pathPrefix as Batch AI accepts them (job_paths.py), before any request;
    `props`: the job with sample values in its placeholders."""
    fields = [(('properties', 'stdOutErrPathPrefix'), props.get('stdOutErrPathPrefix'))]
    fields += [(('properties', 'outputDirectories', index, 'pathPrefix'), entry.get('pathPrefix'))
               for index, entry in enumerate(props.get('outputDirectories') or ()) if isinstance(entry, dict)]
    for where, value in fields:
        problem = value is not None and prefix_problem(value)
        if problem:
            source, path = locate(where)
            raise SpecError(_with_samples(template, where, problem), source=source, path=path)


def _check_job_fields(template, locate):
    """A job template is a Batch AI job: only the job's own fields (the copied schema is permissive, so a typo such as
    `nodeCnt` would otherwise be dropped silently) and at least one toolkit to run."""
    known = _load_schema('job.schema.json')['properties']['properties']['properties']
    unknown = sorted(set(template) - set(known))
    if unknown:
        source, where = locate(('properties', unknown[0]))
        raise SpecError('expected only the fields of a Batch AI job ({}), got the unknown field {!r}'.format(
            ', '.join(sorted(known)), unknown[0]), source=source, path=where)
    toolkits = sorted(name for name in known if name.endswith('Settings') and name != 'containerSettings')
    if not any(template.get(name) for name in toolkits):
        source, where = locate(('properties',))
        raise SpecError('expected a Batch AI job with one of {} (what the job runs)'.format(', '.join(toolkits)),
                        source=source, path=where or None)


def _value_at(node, path):
    for key in path:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _sample(spec):
    """A value of the parameter's type, without listing any storage."""
    if isinstance(spec, FileParamSpec):
        return '{}/{}/sample'.format(MOUNT_ROOTS[spec.mount_method], spec.mount_path)
    return spec.sample(random.Random(0))
