"""The benchmarks, outside the math and search core they measure (which never imports them):

* :mod:`.search`: the Table-4-shaped runtime benchmark (:class:`~.search.BenchConfig`,
  :func:`~.search.run_benchmark`), ``anchordiv bench``;
* :mod:`.scale`: the store-scale benchmark over a synthetic float16 store (:class:`~.scale.ScaleConfig`,
  :func:`~.scale.run_scale_benchmark`), ``anchordiv bench --synthetic``;
* :mod:`.memory`: memory probes (:func:`~.memory.available_memory`, :func:`~.memory.resident_memory`,
  :class:`~.memory.PeakResidentMemory`);
* :mod:`.explorer`: the explorer's interactive steps (:func:`~.explorer.benchmark`), ``anchordiv explorer-bench``;
* :mod:`.browser`: the explorer in headless Chromium against a minimal reference app, with the
  server's CPU per p step by stage (:func:`~.browser.browser_benchmark`), ``explorer-bench --browser``;
* :mod:`.browser_sessions`: several sessions on one server: N moving p at once
  (:func:`~.browser_sessions.sessions_benchmark`, ``--sessions N``) and one session's p step beside
  another's heaviest request (:func:`~.browser_sessions.isolation_benchmark`, ``--isolation``).

Each logs its progress at INFO through its module's logger and returns its figures; the command
line prints the result lines.
"""
