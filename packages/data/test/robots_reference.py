"""Reference robots.txt decisions from protego, the parser the Apertus robots filter used.

Run: /usr/bin/python3 packages/data/test/robots_reference.py > packages/data/test/golden/robots-vectors.json
(needs Debian's python3-protego, 0.2.1). The TypeScript test (src/robots/robots-txt.test.ts)
must reproduce every decision.
"""
import json
from protego import Protego

AGENTS = ["AI2Bot", "Applebot-Extended", "Bytespider", "CCBot", "CCBot/2.0", "CCBot/1.0", "ClaudeBot",
          "cohere-training-data-crawler", "Diffbot", "FacebookBot", "Meta-ExternalAgent", "Google-Extended",
          "GPTBot", "PanguBot", "*", "Googlebot", "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)"]

FILES = {
    "groups": """# groups, merged groups and agent selection
User-agent: *
Disallow: /private
Allow: /private/public

User-agent: GPTBot
Disallow: /

User-agent: Googlebot
User-agent: Bingbot
Disallow: /search
Allow: /search/about

User-agent: gptbot
Allow: /open
""",
    "precedence": """User-agent: *
Allow: /folder/page
Disallow: /folder
Disallow: /tie
Allow: /tie
Disallow: /longer-disallow/x
Allow: /longer-disallow
Allow: /a
Disallow: /a/b/c
""",
    "wildcards": """User-agent: *
Disallow: /*.php$
Disallow: /fish*
Disallow: /*/private/
Disallow: /*?session=
Allow: /$
Disallow: /
Allow: /public*.html$
""",
    "ccbot-versions": """User-agent: CCBot/2.0
Disallow: /

User-agent: CCBot/1.0
Disallow: /old/
""",
    "ai-optout": """User-agent: GPTBot
User-agent: ClaudeBot
User-agent: Google-Extended
Disallow: /

User-agent: *
Allow: /
""",
    "messy": """Disallow: /before-any-agent
User-Agent : Diffbot # comment
disallow: /no-diffbot   # trailing comment
Allow:
Sitemap: https://example.com/sitemap.xml
User-agent: FacebookBot
Crawl-delay: 10
Disallow: /no-space-colon
user-agent: meta-externalagent
DISALLOW: /META
""",
    "percent": """User-agent: *
Disallow: /%7Ejoe/
Disallow: /caf%C3%A9
Disallow: /a%2fb
""",
    "empty-disallow": """User-agent: *
Disallow:
""",
}

PATHS = ["/", "/index.html", "/private", "/private/x", "/private/public/y", "/open", "/open/x", "/search", "/search/about",
         "/search/other", "/folder/page", "/folder/other", "/tie", "/longer-disallow/x", "/longer-disallow/y", "/a/b/c",
         "/a/b", "/index.php", "/index.php?x=1", "/index.phpx", "/fish", "/fishheads/yum", "/Fish", "/x/private/y",
         "/private/", "/page?session=1", "/page?other=1", "/public1.html", "/public1.htm", "/old/page", "/before-any-agent",
         "/no-diffbot", "/no-space-colon", "/META", "/meta", "/~joe/", "/%7ejoe/index", "/café", "/caf%c3%a9", "/a%2fb",
         "/a/b2"]

decisions = {}
for name, content in FILES.items():
    rp = Protego.parse(content)
    decisions[name] = {
        path: "".join("1" if rp.can_fetch("https://example.com" + path, ua) else "0" for ua in AGENTS) for path in PATHS
    }
print(json.dumps({"generator": "packages/data/test/robots_reference.py (protego 0.2.1)", "agents": AGENTS, "files": FILES,
                  "decisions": decisions}, ensure_ascii=False, indent=1))
