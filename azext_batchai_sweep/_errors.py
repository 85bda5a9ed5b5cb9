# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The core's and the SDK's errors as az's error classes: a message and a fix, never a traceback."""
from contextlib import contextmanager

SPEC_RECOMMENDATION = 'Fix the field named above; "az batchai sweep create -h" describes the sweep file.'
# `sweep run` reads the tuning sections too: its help documents each of them with an example.
RUN_SECTIONS = ('objective', 'limits', 'earlyTermination', 'sampling')
RUN_SPEC_RECOMMENDATION = ('Fix the field named above; "az batchai sweep run -h" documents every section of the sweep '
                           'file ({}) with an example, and docs/sweep-file.md has the reference.')
STORAGE_RECOMMENDATION = ('Check the storage account, container or share, and the credentials in AZURE_STORAGE_KEY, '
                          'AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_SAS_TOKEN.')


def capitalized(message):
    return message[:1].upper() + message[1:]


def spec_recommendation(error, command):
    """Where the field of a SpecError is documented: `run -h` (the section named) for run and for any error in a
    section only `run -h` documents, else `create -h`."""
    section = (error.path or '').split('.')[0].split('[')[0]
    if section in RUN_SECTIONS:
        return RUN_SPEC_RECOMMENDATION.format(section)
    if command == 'run':
        return RUN_SPEC_RECOMMENDATION.format(', '.join(RUN_SECTIONS) + ', parameters, job')
    return SPEC_RECOMMENDATION


@contextmanager
def core_errors(command=None):
    """Map core.errors, OSError and azure.core's HTTP errors raised inside the block to azclierror classes;
    `command` ('run') picks the help a sweep-file error points to."""
    from azure.cli.core.azclierror import AzureResponseError, FileOperationError, InvalidArgumentValueError
    from azure.core.exceptions import HttpResponseError, ServiceRequestError, ServiceResponseError
    from azure.cli.core.azclierror import ResourceNotFoundError
    from ._targeting import START_RECOMMENDATION
    from .core.errors import NotFoundError, ServiceError, ServiceUnreachableError, SpecError, StorageError, SweepError
    try:
        yield
    except NotFoundError as ex:
        raise ResourceNotFoundError(capitalized(str(ex)), recommendation=ex.recommendation) from None
    except SpecError as ex:
        # The message starts with the file name (whose case must not change), hence the lead-in.
        raise InvalidArgumentValueError('Invalid sweep definition: {}'.format(ex),
                                        recommendation=spec_recommendation(ex, command)) from None
    except StorageError as ex:
        raise AzureResponseError(capitalized(str(ex)), recommendation=STORAGE_RECOMMENDATION) from None
    except ServiceUnreachableError as ex:
        from ._exit_codes import NoServiceError
        raise NoServiceError(capitalized(str(ex)), recommendation=START_RECOMMENDATION) from None
    except ServiceError as ex:
        raise AzureResponseError(capitalized(str(ex))) from None
    except SweepError as ex:
        raise InvalidArgumentValueError(capitalized(str(ex))) from None
    except HttpResponseError as ex:
        raise http_error(ex) from None
    except (ServiceRequestError, ServiceResponseError) as ex:
        raise connection_error(ex) from None
    except OSError as ex:
        raise FileOperationError('{}: {}'.format(ex.strerror or ex, ex.filename)) from None


def http_error(ex):
    """The azclierror of an HTTP error answer: 404 is 'not found' (exit code 3), 401/403 are auth problems."""
    from azure.cli.core import azclierror
    from .core.service.retry import describe_error
    message = capitalized(describe_error(ex))
    status = getattr(ex, 'status_code', None)
    if status == 404:
        return azclierror.ResourceNotFoundError(message)
    if status == 401:
        return azclierror.UnauthorizedError(
            message, recommendation='Run "az login", or for a local service check its token file.')
    if status == 403:
        return azclierror.ForbiddenError(message)
    if status == 400:
        return azclierror.BadRequestError(message)
    if status is not None and status >= 500:
        return azclierror.AzureInternalError(message)
    return azclierror.AzureResponseError(message)


def connection_error(ex):
    from azure.cli.core.azclierror import AzureConnectionError
    from ._targeting import START_RECOMMENDATION
    from .core.service.retry import describe_error
    return AzureConnectionError('The Batch AI service could not be reached: {}'.format(describe_error(ex)),
                                recommendation=START_RECOMMENDATION)
