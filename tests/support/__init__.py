"""What the tests share: the test agents, helpers to start and watch runs, the golden
snapshots, and the hook that records the scenario histories (`recording`)."""
