"""Check Blob service XML bodies against the Azure Storage Blob REST spec, as azure-storage-blob's generated models
encode it (autorest generates them from the spec's definitions: element names, XML attributes, wrapped lists, required
properties, types).

Strict, as tests/spec_conformance.py is for Batch AI: an element the definition does not have fails, so does a
missing required one, and a value that is not of its type (int, bool, RFC 1123 date). `BlobSpecHook` is a
`raw_response_hook` that checks every XML body a real client receives (listings and errors) and counts them, and
the headers of every success answer against those its operation declares (the generated operations'
deserialisation of them).
"""
import base64
import binascii
import email.utils
import functools
import inspect
import re
from urllib.parse import parse_qs, unquote, urlsplit
from xml.etree import ElementTree

from azure.storage.blob._generated import models as generated  # the spec's definitions, as generated

# The definition of each XML body the local endpoint answers, by the request that asks for it.
_LIST_CONTAINERS = generated.ListContainersSegmentResponse
_LIST_FLAT = generated.ListBlobsFlatSegmentResponse
_LIST_HIERARCHY = generated.ListBlobsHierarchySegmentResponse
_ERROR = generated.StorageError
_LIST = re.compile(r'^(\[)(.*)\]$')
# Required in the definition, but sent by the service (and Azurite) only when a listing asks for deleted blobs or
# snapshots (include=deleted,snapshots), which the local endpoint has none of.
_SENT_ON_REQUEST = {('BlobItemInternal', 'deleted'), ('BlobItemInternal', 'snapshot')}


# The generated operation that reads each answer, by (container or blob, method, comp): its response headers are the
# spec's for that operation.
_OPERATIONS = {
    ('container', 'PUT', None): ('ContainerOperations', 'create'),
    ('container', 'GET', None): ('ContainerOperations', 'get_properties'),
    ('container', 'HEAD', None): ('ContainerOperations', 'get_properties'),
    ('container', 'DELETE', None): ('ContainerOperations', 'delete'),
    ('blob', 'GET', None): ('BlobOperations', 'download'),
    ('blob', 'HEAD', None): ('BlobOperations', 'get_properties'),
    ('blob', 'DELETE', None): ('BlobOperations', 'delete'),
    ('blob', 'PUT', None): ('BlockBlobOperations', 'upload'),
    ('blob', 'PUT', 'block'): ('BlockBlobOperations', 'stage_block'),
    ('blob', 'PUT', 'blocklist'): ('BlockBlobOperations', 'commit_block_list'),
}
# Headers Azure sends that the generated client does not read (Delete Blob's, in Azure's recorded answers): allowed.
_SENT_BEYOND_THE_CLIENT = {('BlobOperations', 'delete'): {'x-ms-delete-type-permanent'}}
_HEADER = re.compile(r'response_headers\["([^"]+)"\]\s*=\s*self\._deserialize\(\s*"([^"]+)"')


@functools.lru_cache(maxsize=None)
def declared_headers(class_name, method_name):
    """{header name, lower-cased: type} of one generated operation's responses."""
    from azure.storage.blob._generated import operations
    source = inspect.getsource(getattr(getattr(operations, class_name), method_name))
    return {name.lower(): type_name for name, type_name in _HEADER.findall(source)}


def check_headers(method, url, headers):
    """Errors of a success answer's headers against its operation's: every x-ms- header is one the operation
    declares, and every declared header it has is of its type (int, bool, RFC 1123 date, base64)."""
    parts = unquote(urlsplit(url).path).split('/', 3)
    query = {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}
    kind = 'blob' if len(parts) == 4 and parts[3] else 'container'
    if kind == 'container' and query.get('restype') != 'container' or query.get('comp') == 'list':
        return []  # an account-level request or a listing: its body is checked
    operation = _OPERATIONS.get((kind, method, query.get('comp')))
    if operation is None:
        return ['{} {}: no operation of the spec answers it'.format(method, url)]
    declared = declared_headers(*operation)
    allowed = _SENT_BEYOND_THE_CLIENT.get(operation, set())
    errors = []
    for name, value in headers.items():
        lower = name.lower()
        if lower.startswith('x-ms-') and lower not in declared and lower not in allowed:
            errors.append('{}.{}: header {} is not in the spec'.format(operation[0], operation[1], name))
        elif declared.get(lower) == 'bytearray':
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                errors.append('{}: {!r} is not base64'.format(name, value))
        elif lower in declared:
            _check_value(value, declared[lower], name, errors)
    return errors


def _model(name):
    return getattr(generated, name, None)


def _check_value(value, type_name, where, errors):
    text = value if value is not None else ''
    if type_name in ('int', 'long'):
        if not re.fullmatch(r'-?\d+', text):
            errors.append('{}: {!r} is not an integer'.format(where, text))
    elif type_name == 'bool':
        if text not in ('true', 'false'):
            errors.append('{}: {!r} is not a boolean'.format(where, text))
    elif type_name == 'rfc-1123':
        try:
            email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            errors.append('{}: {!r} is not an RFC 1123 date'.format(where, text))


def check_element(element, model, where='', errors=None):
    """Errors of `element` against `model` (a generated model class): a list of strings, empty when it conforms."""
    errors = [] if errors is None else errors
    where = where or element.tag
    attribute_map = model._attribute_map  # pylint: disable=protected-access
    required = {name for name, rule in getattr(model, '_validation', {}).items()
                if rule.get('required') and (model.__name__, name) not in _SENT_ON_REQUEST}
    known = set()
    for attribute, description in attribute_map.items():
        xml = description.get('xml', {})
        type_name = description['type']
        name = xml.get('name', description['key'])
        if xml.get('attr'):
            value = element.get(name)
            if value is None:
                if attribute in required:
                    errors.append('{}: required attribute {} missing'.format(where, name))
            else:
                _check_value(value, type_name, '{}@{}'.format(where, name), errors)
            continue
        if xml.get('text'):
            _check_value(element.text, type_name, where, errors)
            continue
        listed = _LIST.match(type_name)
        if listed:
            item_type = listed.group(2)
            item_model = _model(item_type)
            items_name = xml.get('itemsName') or getattr(item_model, '_xml_map', {}).get('name', item_type)
            if xml.get('wrapped'):
                known.add(name)
                wrapper = element.find(name)
                if wrapper is None:
                    if attribute in required:
                        errors.append('{}: required element {} missing'.format(where, name))
                    continue
                for child in wrapper:
                    if child.tag != items_name:
                        errors.append('{}/{}: unexpected element {}'.format(where, name, child.tag))
                    elif item_model is not None:
                        check_element(child, item_model, '{}/{}/{}'.format(where, name, items_name), errors)
            else:
                known.add(items_name)
                for child in element.findall(items_name):
                    if item_model is not None:
                        check_element(child, item_model, '{}/{}'.format(where, items_name), errors)
            continue
        child_model = _model(type_name)
        if child_model is not None:
            name = getattr(child_model, '_xml_map', {}).get('name', name)
        known.add(name)
        child = element.find(name)
        if child is None:
            if attribute in required:
                errors.append('{}: required element {} missing'.format(where, name))
            continue
        if child_model is not None and not type_name.startswith('{') and getattr(child_model, '_attribute_map', None) \
                and type_name not in ('BlobMetadata', 'BlobTags'):
            check_element(child, child_model, '{}/{}'.format(where, name), errors)
        elif not type_name.startswith('{') and child_model is None:
            _check_value(child.text, type_name, '{}/{}'.format(where, name), errors)
    for child in element:
        if child.tag not in known:
            errors.append('{}: element {} is not in the definition'.format(where, child.tag))
    return errors


def definition_of(method, query, status):
    """The generated model of the XML body answering this request, or None (no XML body defined; errors are
    checked by check_error)."""
    if status >= 400 or method != 'GET' or query.get('comp') != 'list':
        return None
    if query.get('restype') == 'container':
        return _LIST_HIERARCHY if query.get('delimiter') else _LIST_FLAT
    return _LIST_CONTAINERS


def check_error(root, header_code):
    """An error body as the service's: <Error> with a Code (the x-ms-error-code header's) and a Message. (The spec's
    StorageError definition has only Message: the SDK reads the code from the header.)"""
    errors = [] if root.tag == 'Error' else ['root element {} is not Error'.format(root.tag)]
    code, message = root.findtext('Code'), root.findtext('Message')
    if code != header_code:
        errors.append('error code {!r} is not the x-ms-error-code header {!r}'.format(code, header_code))
    if not message:
        errors.append('error without a Message')
    # Code, and the detail of an authentication failure, are elements the service sends beyond the definition.
    errors += [problem for problem in check_element(root, _ERROR, 'Error')
               if not problem.endswith(('element Code is not in the definition',
                                        'element AuthenticationErrorDetail is not in the definition'))]
    return errors


class BlobSpecHook:
    """A `raw_response_hook` for azure-storage-blob clients: checks every XML body they receive against its
    definition; `checked` counts the bodies, `errors` lists what did not conform."""

    def __init__(self):
        self.checked, self.errors = 0, []

    def __call__(self, pipeline_response):
        request, response = pipeline_response.http_request, pipeline_response.http_response
        query = {name: values[0] for name, values in parse_qs(urlsplit(request.url).query).items()}
        model = definition_of(request.method, query, response.status_code)
        if response.status_code < 300:
            problems = check_headers(request.method, request.url, response.headers)
            self.errors += ['{} {}: {}'.format(request.method, urlsplit(request.url).path, problem)
                            for problem in problems]
        if request.method == 'HEAD' or (model is None and response.status_code < 400):
            return  # no body, or a blob's content
        body = response.body()
        if not body:
            return
        root = ElementTree.fromstring(body)
        if model is None:
            problems = check_error(root, response.headers.get('x-ms-error-code'))
        else:
            expected = model._xml_map['name']  # pylint: disable=protected-access
            problems = [] if root.tag == expected else ['root element {} is not {}'.format(root.tag, expected)]
            problems += check_element(root, model)
        self.checked += 1
        self.errors += ['{} {}: {}'.format(request.method, urlsplit(request.url).path, problem)
                        for problem in problems]
