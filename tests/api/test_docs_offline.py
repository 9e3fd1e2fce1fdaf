"""The API docs pages load nothing from another host: internal networks are often closed.

Every ``src=``/``href=`` (and every ``url(...)`` in a page) must be a path on this server, and
each must answer 200 from the app itself.
"""

import re
from urllib.parse import urljoin, urlsplit

from tests.plans.support import Client

PAGES = ["/schema", "/schema/swagger", "/schema/redoc", "/schema/oauth2-redirect.html"]
REFERENCE = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\(\s*["']?([^"')]+)""", re.I)


def references(html: str) -> list[str]:
    return [a or b for a, b in REFERENCE.findall(html)]


async def test_every_docs_page_loads_only_same_origin_assets_that_answer(client: Client) -> None:
    seen: set[str] = set()
    for page in PAGES:
        response = await client.get(page)
        assert response.status_code == 200, page
        assert response.headers["content-type"].startswith("text/html")
        html = response.text
        found = references(html)
        assert found or page.endswith("oauth2-redirect.html"), f"{page}: the pattern is wrong"
        for ref in found:
            if ref.startswith("data:") or ref.startswith("#"):
                continue
            parts = urlsplit(ref)
            assert not parts.scheme and not parts.netloc, f"{page} loads {ref} from elsewhere"
            seen.add(urljoin(page, parts.path))
    assert any(path.endswith("/swagger-ui-bundle.js") for path in seen)
    assert any(path.endswith("/redoc.standalone.js") for path in seen)
    for path in sorted(seen):
        asset = await client.get(path)
        assert asset.status_code == 200, path
        assert asset.content, path


async def test_the_pages_that_would_load_a_cdn_are_not_offered(client: Client) -> None:
    # Litestar's Elements and RapiDoc pages load their scripts from unpkg; no package ships them.
    for page in ("/schema/elements", "/schema/rapidoc"):
        assert (await client.get(page)).status_code == 404, page


async def test_the_openapi_document_is_still_served(client: Client) -> None:
    response = await client.get("/schema/openapi.json")
    assert response.status_code == 200 and "/plan.svg" in response.json()["paths"]
