"""``runport run --save-files DIR``: the files and images the model generated
(``receipt.files``, adr/0055-what-the-provider-did-itself.md), written into ``DIR``.

Each file is named by runport, never by the model: ``<turn>-<n>-<sha256 prefix><extension>``,
the extension the one its media type is known by (``.bin`` otherwise). So no name can reach
outside ``DIR``; a symbolic link already standing at a name is not followed (the write is
refused, coded). ``DIR`` is made when missing; one that is a file, or cannot be made, is
refused before the run starts.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import os
from collections.abc import Sequence
from pathlib import Path

from runport.cli._errors import CliError
from runport.contracts import ErrorCode, ExecutionReceipt

__all__ = ["prepare_folder", "save_files"]

_EXTENSIONS = {"image/jpeg": ".jpg", "image/png": ".png", "image/webp": ".webp"}
"""The extension of a common media type where ``mimetypes`` would pick a rarer one."""


def prepare_folder(folder: Path) -> Path:
    """``folder``, made if missing; refused (``TQX_DATA_INVALID``) when it is not a folder
    or cannot be made."""
    if folder.exists() and not folder.is_dir():
        raise CliError(ErrorCode.DATA_INVALID, f"--save-files {folder}: not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CliError(
            ErrorCode.DATA_INVALID, f"--save-files {folder}: cannot make it ({error.strerror})"
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CliError(ErrorCode.DATA_INVALID, f"--save-files {folder}: not writable")
    return folder


def _extension(media_type: str) -> str:
    return _EXTENSIONS.get(media_type) or mimetypes.guess_extension(media_type) or ".bin"


def save_files(folder: Path, receipts: Sequence[ExecutionReceipt]) -> list[Path]:
    """Write every generated file of ``receipts`` (turn by turn) into ``folder``; the paths
    written, in order."""
    written: list[Path] = []
    for turn, receipt in enumerate(receipts, 1):
        for number, part in enumerate(receipt.files or [], 1):
            if part.data is None:  # a file the provider gave by URL: shown, never fetched
                continue
            data = base64.b64decode(part.data)
            digest = hashlib.sha256(data).hexdigest()[:12]
            target = folder / f"{turn}-{number}-{digest}{_extension(part.media_type)}"
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
            try:
                handle = os.open(target, flags, 0o644)
            except OSError as error:
                raise CliError(
                    ErrorCode.DATA_INVALID,
                    f"--save-files: cannot write {target.name} ({error.strerror})",
                ) from None
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            written.append(target)
    return written
