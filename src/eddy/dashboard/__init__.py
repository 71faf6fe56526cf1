"""The status dashboard served by ``eddy dashboard``: nodes, apps, metrics, HA, an editor.

It talks to nodes only over their HTTP APIs (``/statistics``, ``/siddhi-apps…``,
``/metrics``, ``/stores/query``, ``/ha``) and reads history from WSO2's ``METRIC_*``
tables; it never imports the node or the engine. It does use ``eddy.lang`` and
``eddy.plan`` — plain libraries below every node — to validate and explain apps in the
editor.

Pages are rendered on the server as plain HTML (Python string building with every value
escaped), and one small hand-written script (``static/dashboard.js``) draws the live
charts as inline SVG, marks editor errors and sends forms as JSON. Why not a front-end
framework or a chart library: the dashboard must run with nothing fetched from the
internet, ship inside the Python package without a build step, and keep a first page load
under 500 KB; a few hundred lines of script do all of that and are easy to audit.
"""
