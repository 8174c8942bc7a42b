"""The watcher: watchdog observers, debounce, start-up reconcile; hands paths to the indexer."""

from precedents.watcher.core import Watcher, WatchStats, WatchTiming
from precedents.watcher.pidfile import PID_NAME, WatcherRunning, read_pid

__all__ = ["PID_NAME", "WatchStats", "WatchTiming", "Watcher", "WatcherRunning", "read_pid"]
