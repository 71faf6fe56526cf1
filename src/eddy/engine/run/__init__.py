"""Running compiled groups: a group between bus topics (:mod:`.group_runner`), an app as its
groups, ``eddy replay`` and ``eddy run``, and what a running group needs around its query
(output writer, heartbeat, on-demand queries, real-time mode, metrics)."""
