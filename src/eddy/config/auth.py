"""``auth.configs``: WSO2 SP's local user store (users, roles, the admin role)."""

from __future__ import annotations

import base64
import binascii
from typing import Literal

from pydantic import Field, field_validator

from eddy.config.base import Block


class User(Block):
    """A local user; ``password`` is base64-encoded as in WSO2 SP (``YWRtaW4=`` is admin)."""

    username: str = Field(min_length=1)
    password: str
    roles: str = "1"

    @field_validator("password")
    @classmethod
    def _base64(cls, value: str) -> str:
        try:
            base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise ValueError("WSO2 SP keeps local passwords base64-encoded (admin is "
                             "'YWRtaW4='); encode it with: printf %s 'secret' | base64") from None
        return value

    @field_validator("roles", mode="before")
    @classmethod
    def _role_ids(cls, value: object) -> object:
        return str(value) if isinstance(value, int) else value

    @property
    def plain_password(self) -> str:
        """The password in clear text."""
        return base64.b64decode(self.password).decode("utf-8")

    @property
    def role_ids(self) -> frozenset[str]:
        """The ids in the comma-separated ``roles``."""
        return frozenset(r.strip() for r in self.roles.split(",") if r.strip())


class UserEntry(Block):
    user: User


class Role(Block):
    id: str
    displayName: str

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) else value


class RoleEntry(Block):
    role: Role


class UserStore(Block):
    users: list[UserEntry] = [UserEntry(user=User(username="admin", password="YWRtaW4="))]
    roles: list[RoleEntry] = [RoleEntry(role=Role(id="1", displayName="admin"))]


class UserManager(Block):
    adminRole: str = "admin"
    userStore: UserStore = UserStore()


class AuthConfigs(Block):
    """``auth.configs``: WSO2 SP's local user store. Users in ``adminRole`` may change apps;
    the others may only read (eddy has no permissions database)."""

    type: Literal["local"] = "local"
    userManager: UserManager = UserManager()
