"""The sweep definition and plan: parameter specs, templates and placeholders, lazy expansion, job names, sweep files and their schemas, file parameters' storage listings, the plan file."""
