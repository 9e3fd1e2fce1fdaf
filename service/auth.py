"""API keys and roles, without the web framework: tables, hashing, creation.

Keys are 32 random bytes (urlsafe base64); a plain sha256 is enough to store them because they
are never guessable the way passwords are. Roles are ordered viewer < planner < reviewer < admin.
"""

import hashlib
import secrets
from typing import Literal

from advanced_alchemy.base import IdentityAuditBase
from sqlalchemy import Boolean, String, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

Role = Literal["viewer", "planner", "reviewer", "admin"]
ROLES: tuple[Role, ...] = ("viewer", "planner", "reviewer", "admin")
KEY_PREFIX = "gcp_"


class ApiKey(IdentityAuditBase):
    __tablename__ = "api_keys"

    principal: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))
    key_sha256: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    active: Mapped[bool] = mapped_column(Boolean, default=True)


def role_rank(role: str) -> int:
    return ROLES.index(role) if role in ROLES else -1


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


async def create_key(session: AsyncSession, principal: str, role: Role) -> str:
    """Store a new key for ``principal`` and return it; only its hash is kept."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    key = new_key()
    session.add(ApiKey(principal=principal, role=role, key_sha256=hash_key(key)))
    await session.flush()
    return key


async def find_key(session: AsyncSession, key: str) -> ApiKey | None:
    result = await session.execute(
        select(ApiKey).where(ApiKey.key_sha256 == hash_key(key), ApiKey.active.is_(True))
    )
    return result.scalar_one_or_none()
