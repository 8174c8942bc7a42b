"""Settings: argument -> environment variable -> TOML file -> default, resolved in
``settings`` only, and checked there; the models precedents knows (``profiles``).

Every name of both is here: ``from precedents.config import load_settings``.
"""

from __future__ import annotations

from precedents.config.profiles import DEFAULT_MODEL as DEFAULT_MODEL
from precedents.config.profiles import DEVICES as DEVICES
from precedents.config.profiles import MULTILINGUAL_MODEL as MULTILINGUAL_MODEL
from precedents.config.profiles import PROFILES as PROFILES
from precedents.config.profiles import RECOMMENDED_MODEL as RECOMMENDED_MODEL
from precedents.config.profiles import RUNTIMES as RUNTIMES
from precedents.config.profiles import Loader as Loader
from precedents.config.profiles import ModelProfile as ModelProfile
from precedents.config.profiles import Thresholds as Thresholds
from precedents.config.profiles import closest as closest
from precedents.config.profiles import device_in_use as device_in_use
from precedents.config.profiles import device_problem as device_problem
from precedents.config.profiles import in_hub_cache as in_hub_cache
from precedents.config.profiles import known_models as known_models
from precedents.config.profiles import listing as listing
from precedents.config.profiles import model_problem as model_problem
from precedents.config.profiles import model_profile as model_profile
from precedents.config.profiles import parse_model_id as parse_model_id
from precedents.config.profiles import runs_on_onnx as runs_on_onnx
from precedents.config.profiles import seed_thresholds as seed_thresholds
from precedents.config.profiles import unknown_model_text as unknown_model_text
from precedents.config.settings import CONFIG_FILE as CONFIG_FILE
from precedents.config.settings import (
    DEFAULT_MAX_CONVERSATION_BYTES as DEFAULT_MAX_CONVERSATION_BYTES,
)
from precedents.config.settings import DEFAULT_MAX_FILE_BYTES as DEFAULT_MAX_FILE_BYTES
from precedents.config.settings import ENV_VARS as ENV_VARS
from precedents.config.settings import FILE_KEYS as FILE_KEYS
from precedents.config.settings import HTTP_TOKEN_ENV as HTTP_TOKEN_ENV
from precedents.config.settings import NOT_FILE_KEYS as NOT_FILE_KEYS
from precedents.config.settings import ModelSpec as ModelSpec
from precedents.config.settings import Settings as Settings
from precedents.config.settings import claude_dir as claude_dir
from precedents.config.settings import default_cache_dir as default_cache_dir
from precedents.config.settings import ensure_private_dir as ensure_private_dir
from precedents.config.settings import exported_http_token as exported_http_token
from precedents.config.settings import load_settings as load_settings
from precedents.config.settings import model_cache_dir as model_cache_dir
from precedents.config.settings import private_umask as private_umask
from precedents.config.settings import record_http_port as record_http_port
from precedents.config.settings import state_dir as state_dir
from precedents.config.settings import torch_threads as torch_threads
from precedents.config.settings import xdg_config_home as xdg_config_home
