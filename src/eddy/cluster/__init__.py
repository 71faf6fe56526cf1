"""The manager of the fully distributed deployment: it keeps parent apps, splits them into
child apps, places those on workers all-or-nothing, follows the workers' heartbeats and
reconciles the desired placement with what the workers run (DESIGN.md §5)."""
