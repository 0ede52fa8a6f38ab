"""Builds a .vsix offline: a zip of `extension/...`, `extension.vsixmanifest` and
`[Content_Types].xml`, which is all VS Code (and code-server) read when installing one.

Usage: package_vsix.py [EXTENSION_DIR] [--out FILE]. The files packed are `package.json`, the
`files` listed in it and `README.md` if present; nothing is downloaded. Timestamps are fixed so
the same sources give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

CONTENT_TYPES = """<?xml version="1.0" encoding="utf-8"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension=".json" ContentType="application/json"/>
<Default Extension=".js" ContentType="application/javascript"/>
<Default Extension=".md" ContentType="text/markdown"/>
<Default Extension=".svg" ContentType="image/svg+xml"/>
<Default Extension=".vsixmanifest" ContentType="text/xml"/>
</Types>
"""

FIXED_TIME = (2020, 1, 1, 0, 0, 0)


def manifest(pkg: dict, has_readme: bool) -> str:
    def prop(key: str, value: str) -> str:
        return f"      <Property Id={quoteattr(key)} Value={quoteattr(value)} />"

    props = [
        prop("Microsoft.VisualStudio.Code.Engine", pkg["engines"]["vscode"]),
        prop(
            "Microsoft.VisualStudio.Code.ExtensionDependencies",
            ",".join(pkg.get("extensionDependencies", [])),
        ),
        prop("Microsoft.VisualStudio.Code.ExtensionPack", ""),
        prop("Microsoft.VisualStudio.Code.ExtensionKind", "workspace"),
    ]
    assets = [
        '    <Asset Type="Microsoft.VisualStudio.Code.Manifest" '
        'Path="extension/package.json" Addressable="true" />'
    ]
    if has_readme:
        assets.append(
            '    <Asset Type="Microsoft.VisualStudio.Services.Content.Details" '
            'Path="extension/README.md" Addressable="true" />'
        )
    return "\n".join(
        [
            '<?xml version="1.0" encoding="utf-8"?>',
            '<PackageManifest Version="2.0.0" '
            'xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011" '
            'xmlns:d="http://schemas.microsoft.com/developer/vsx-schema-design/2011">',
            "  <Metadata>",
            f'    <Identity Language="en-US" Id={quoteattr(pkg["name"])} '
            f"Version={quoteattr(pkg['version'])} Publisher={quoteattr(pkg['publisher'])} />",
            f"    <DisplayName>{escape(pkg.get('displayName', pkg['name']))}</DisplayName>",
            f'    <Description xml:space="preserve">{escape(pkg.get("description", ""))}'
            "</Description>",
            f"    <Categories>{escape(','.join(pkg.get('categories', [])))}</Categories>",
            "    <Properties>",
            *props,
            "    </Properties>",
            "  </Metadata>",
            "  <Installation>",
            '    <InstallationTarget Id="Microsoft.VisualStudio.Code" />',
            "  </Installation>",
            "  <Dependencies />",
            "  <Assets>",
            *assets,
            "  </Assets>",
            "</PackageManifest>",
            "",
        ]
    )


def build(ext_dir: Path, out: Path) -> Path:
    pkg = json.loads((ext_dir / "package.json").read_text(encoding="utf-8"))
    names = ["package.json", *pkg.get("files", [])]
    readme = ext_dir / "README.md"
    if readme.is_file() and "README.md" not in names:
        names.append("README.md")
    missing = [n for n in names if not (ext_dir / n).is_file()]
    if missing:
        raise SystemExit(f"package_vsix: missing {missing} in {ext_dir} (build first?)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:

        def add(name: str, data: bytes) -> None:
            info = zipfile.ZipInfo(name, FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)

        add("[Content_Types].xml", CONTENT_TYPES.encode())
        add("extension.vsixmanifest", manifest(pkg, readme.is_file()).encode())
        for name in names:
            add(f"extension/{name}", (ext_dir / name).read_bytes())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ext_dir", nargs="?", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--out", help="output file (default: <name>-<version>.vsix in EXT_DIR)")
    args = parser.parse_args(argv)
    ext_dir = Path(args.ext_dir).resolve()
    pkg = json.loads((ext_dir / "package.json").read_text(encoding="utf-8"))
    out = Path(args.out) if args.out else ext_dir / f"{pkg['name']}-{pkg['version']}.vsix"
    sys.stdout.write(f"{build(ext_dir, out)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
