"""The sweep report: what the service holds about a sweep, drawn as one self-contained HTML file.

Three steps, each a pure function of the one before, so each is tested on its own:

    collect.py   the service -> a SweepRecord (model.py): jobs as core.tuning Trials with every intermediate value
    data.py      SweepRecord -> the report's data (plain JSON: summary, axes, what each plot draws); `-o json`
    html.py      report data -> one HTML document: inline CSS, inline SVG (plots.py, svg.py), a little inline script

Nothing in the document is fetched from anywhere (no fonts, scripts or images from the network): the file opens the
same on a laptop, in Cloud Shell's download and on a cluster without internet.
"""
