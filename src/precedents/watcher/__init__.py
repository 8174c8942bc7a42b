"""The watcher: watchdog observers, debounce, start-up reconcile; hands paths to the indexer."""

from precedents.watcher.core import ROLE, Watcher, WatcherRunning, WatchStats, WatchTiming

__all__ = ["ROLE", "WatchStats", "WatchTiming", "Watcher", "WatcherRunning"]
