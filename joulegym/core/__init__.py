"""What every family shares and no family owns (``docs/architecture.md``).

=====================  ===========================================================================
module                 what it holds
=====================  ===========================================================================
:mod:`.config`         config resolution (defaults <- scenario <- kwargs), the value checks, the
                       :class:`~.config.Scenario` record, ``parse_env_kwargs``
:mod:`.env`            :class:`~.env.JoulegymEnv`, the env template: it owns ``reset()``/``step()``
:mod:`.actions`        :class:`~.actions.ActionType`: one class per ``action_mode`` (space, mask,
                       decode/repair, encode) and the action validators
:mod:`.rewards`        named reward parts, their weights and the ``reward_space``
:mod:`.simulator`      the :class:`~.simulator.Simulator` protocol every family's simulator follows
:mod:`.slots`          the event-slot shell: K slots, overflow, wake-ups (event-driven families)
:mod:`.policy`         the :class:`~.policy.Policy` protocol and the family-scoped policy registry
:mod:`.family`         :class:`~.family.FamilyDescriptor`, registered in one place (env ids too)
:mod:`.rollout`        the one episode loop (evaluation, benchmarks, tests)
:mod:`.cache`          a bounded memo cache
:mod:`.io`, :mod:`.plotting`  atomic result files, headless matplotlib helpers
=====================  ===========================================================================

The core imports nothing from ``joulegym.envs``, ``baselines``, ``scenarios``, ``evaluation`` or
``agents`` (checked by the import-linter contract in ``pyproject.toml``). Importing this package
imports no submodule.
"""
