"""A headless Home Assistant configuration for the test: an owner with a long-lived access token
and the MQTT integration's config entry written into .storage (what onboarding and the MQTT config
flow would write), so no browser is needed. Prints the token.

Usage: home_assistant_setup.py CONFIG_DIR BROKER_PORT
"""

import json
import os
import secrets
import sys
from datetime import datetime, timedelta, timezone

import jwt

config_dir, broker_port = sys.argv[1], int(sys.argv[2])
storage = os.path.join(config_dir, ".storage")
os.makedirs(storage, exist_ok=True)
now = datetime.now(timezone.utc)
user_id, token_id, jwt_key = secrets.token_hex(16), secrets.token_hex(16), secrets.token_hex(64)


def write(key, version, minor_version, data):
    with open(os.path.join(storage, key), "w") as file:
        json.dump({"version": version, "minor_version": minor_version, "key": key, "data": data}, file)


write(
    "auth",
    1,
    1,
    {
        "users": [
            {
                "id": user_id,
                "group_ids": ["system-admin"],
                "is_owner": True,
                "is_active": True,
                "name": "test",
                "system_generated": False,
                "local_only": False,
            }
        ],
        "groups": [{"id": "system-admin", "name": "Administrators"}],
        "credentials": [],
        "refresh_tokens": [
            {
                "id": token_id,
                "user_id": user_id,
                "client_id": None,
                "client_name": "gattway test",
                "client_icon": None,
                "token_type": "long_lived_access_token",
                "created_at": now.isoformat(),
                "access_token_expiration": 86400 * 365,
                "token": secrets.token_hex(64),
                "jwt_key": jwt_key,
                "last_used_at": None,
                "last_used_ip": None,
                "expire_at": None,
                "version": None,
            }
        ],
    },
)
write(
    "core.config_entries",
    1,
    5,
    {
        "entries": [
            {
                "entry_id": secrets.token_hex(13),
                "version": 2,
                "minor_version": 1,
                "domain": "mqtt",
                "title": "127.0.0.1",
                "data": {"broker": "127.0.0.1", "port": broker_port},
                "options": {"discovery": True, "discovery_prefix": "homeassistant"},
                "pref_disable_new_entities": False,
                "pref_disable_polling": False,
                "source": "user",
                "unique_id": None,
                "disabled_by": None,
                "created_at": now.isoformat(),
                "modified_at": now.isoformat(),
                "discovery_keys": {},
                "subentries": [],
            }
        ]
    },
)
write("onboarding", 4, 1, {"done": ["user", "core_config", "analytics", "integration"]})
print(
    jwt.encode(
        {"iss": token_id, "iat": int(now.timestamp()), "exp": int((now + timedelta(days=365)).timestamp())},
        jwt_key,
        algorithm="HS256",
    )
)
