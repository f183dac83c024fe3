"""The pytest session's glue: the items and the gates as JUnit cases (collect.py, node_ids.py), recording inside
a run (recording_hooks.py), the output boundary for files (outputs.py), a run stopped early (interruption.py)
and the commands the plugin prints (advice.py). Only this wing, plugin.py and run.py know pytest's objects."""
