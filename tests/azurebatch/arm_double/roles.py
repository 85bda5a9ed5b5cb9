"""Built-in Azure role definitions the doubles grant from (test code only): each role's actions and dataActions,
copied in substance from Azure's built-in role list, so that the doubles decide access the way Azure RBAC does
(an assignment at a scope applies at every scope below it; `*` in an action matches any segment run)."""
import fnmatch

ROLES = {
    'Owner': {'actions': ['*'], 'dataActions': []},
    'Contributor': {'actions': ['*'], 'dataActions': []},
    'Reader': {'actions': ['*/read'], 'dataActions': []},
    'Azure Batch Account Reader': {'actions': ['Microsoft.Batch/batchAccounts/*/read',
                                               'Microsoft.Batch/batchAccounts/read'], 'dataActions': []},
    'Azure Batch Data Contributor': {'actions': ['Microsoft.Batch/batchAccounts/read',
                                                 'Microsoft.Batch/batchAccounts/applications/*',
                                                 'Microsoft.Batch/batchAccounts/certificates*',
                                                 'Microsoft.Batch/batchAccounts/jobSchedules/*',
                                                 'Microsoft.Batch/batchAccounts/jobs/*',
                                                 'Microsoft.Batch/batchAccounts/pools/*'], 'dataActions': []},
    'Azure Batch Job Submitter': {'actions': ['Microsoft.Batch/batchAccounts/read',
                                              'Microsoft.Batch/batchAccounts/applications/read',
                                              'Microsoft.Batch/batchAccounts/pools/read',
                                              'Microsoft.Batch/batchAccounts/jobSchedules/*',
                                              'Microsoft.Batch/batchAccounts/jobs/*'], 'dataActions': []},
    'Storage Blob Data Reader': {'actions': [
        'Microsoft.Storage/storageAccounts/blobServices/containers/read',
        'Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action'], 'dataActions': [
        'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read']},
    'Storage Blob Data Contributor': {'actions': [
        'Microsoft.Storage/storageAccounts/blobServices/containers/delete',
        'Microsoft.Storage/storageAccounts/blobServices/containers/read',
        'Microsoft.Storage/storageAccounts/blobServices/containers/write',
        'Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action'], 'dataActions': [
        'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/delete',
        'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read',
        'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write',
        'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/move/action',
        'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/add/action']},
    'Storage Blob Data Owner': {'actions': [
        'Microsoft.Storage/storageAccounts/blobServices/containers/*',
        'Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action'], 'dataActions': [
        'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/*']},
    'Storage File Data Privileged Reader': {'actions': [], 'dataActions': [
        'Microsoft.Storage/storageAccounts/fileServices/fileshares/files/read',
        'Microsoft.Storage/storageAccounts/fileServices/readFileBackupSemantics/action']},
    'Storage File Data Privileged Contributor': {'actions': [], 'dataActions': [
        'Microsoft.Storage/storageAccounts/fileServices/fileshares/files/*',
        'Microsoft.Storage/storageAccounts/fileServices/readFileBackupSemantics/action',
        'Microsoft.Storage/storageAccounts/fileServices/writeFileBackupSemantics/action']},
    'Storage File Data SMB Share Reader': {'actions': [], 'dataActions': [
        'Microsoft.Storage/storageAccounts/fileServices/fileshares/files/read']},
}


def grants(patterns, action):
    """True when one of the role's action ``patterns`` covers ``action`` (case-insensitive, `*` wildcard)."""
    return any(fnmatch.fnmatchcase(action.lower(), p.lower()) for p in patterns)


def in_scope(assignment_scope, scope):
    """An assignment at ``assignment_scope`` applies to ``scope`` and everything below it."""
    a, s = assignment_scope.rstrip('/').lower(), scope.rstrip('/').lower()
    return s == a or s.startswith(a + '/')
