"""Teams: people who share model assignments, model access, compaction profiles and budgets.

A team never widens access to a channel (each stays its owner's); it decides
which models answer the team's channels (`roles`), which models its members
may choose (`access`), and how much the team's channels may spend (`budgets`).
Who may manage a team: its admins and staff holding `chatcore.change_team`
(`selectors.team_manageable_get`).
"""
