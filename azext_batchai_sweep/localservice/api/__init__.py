"""What the service's listeners answer: arm_api.py (Batch AI's ARM routes), downloads.py (the signed links of job
files), files_api.py (the Azure Files REST subset over the data dir's shares) and blob_api.py (the Blob REST subset
over its containers, built on files_api's request parsing, authentication and errors)."""
