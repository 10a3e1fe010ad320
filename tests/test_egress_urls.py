"""The egress guard's URL checks (bot/base/egress.py, ``check_url``), all before any I/O, and the
properties of its address rules; the connect-time guard is in tests/test_egress.py."""

from __future__ import annotations

import doctest
import ipaddress
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.base import egress
from bot.base.egress import EgressPolicy, EgressRefused, address_refusal, check_url
from bot.errors import ConfigError, PermanentSourceError

CHAT = EgressPolicy()


# --- schemes, user info, hosts, ports ----------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://feeds.example.org/x", "gopher://feeds.example.org:70/_x",
     "data:text/plain,hi", "javascript:alert(1)", "//feeds.example.org/x", "ws://example.org/"],
)  # fmt: skip
def test_only_http_and_https(url: str) -> None:
    with pytest.raises(
        EgressRefused, match=r"^a source address must start with http:// or https://"
    ):
        check_url(url, CHAT)


def test_http_and_https_public_names_pass() -> None:
    assert str(check_url("HTTPS://Feeds.Example.ORG/x.json?q=1", CHAT)) == (
        "https://feeds.example.org/x.json?q=1"
    )
    assert check_url("http://bücher.example/", CHAT).raw_host == "xn--bcher-kva.example"
    assert str(check_url("http://9.9.9.9:8080/", CHAT)) == "http://9.9.9.9:8080/"


@pytest.mark.parametrize(
    "url",
    ["http://admin:hunter2@feeds.example.org/", "http://admin@feeds.example.org/",
     "http://:hunter2@feeds.example.org/", "http://@feeds.example.org/"],
)  # fmt: skip
def test_user_info_is_refused_and_not_echoed(url: str) -> None:
    with pytest.raises(EgressRefused) as caught:
        check_url(url, CHAT)
    assert str(caught.value) == "a source address must not contain a user name or password"


@pytest.mark.parametrize(
    "url",
    ["http://2130706433/", "http://0x7f.1/", "http://0x7f000001/", "http://017700000001/",
     "http://0177.0.0.1/", "http://127.1/", "http://127.0.1/", "http://0/", "http://0x/",
     "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://[::127.0.0.1]/",
     "http://[64:ff9b::7f00:1]/", "http://[2002:7f00:1::]/", "http://[2001:0:4136:e378::]/",
     "http://[::]/", "http://0.0.0.0/", "http://127.0.0.1./", "http://１２７.０.０.１/",
     "http://%31%32%37.0.0.1/", "http://[fe80::1%25eth0]/",
     "http://feeds.example.123/"],
)  # fmt: skip
def test_numeric_tricks_are_refused(url: str) -> None:
    with pytest.raises(EgressRefused):
        check_url(url, CHAT)


def test_allow_list_exact_and_suffix() -> None:
    policy = EgressPolicy(allowed_hosts=("feeds.example.org", "*.nlrb.gov", "BÜCHER.example."))
    for ok in ("http://feeds.example.org/", "http://FEEDS.example.org./x", "http://a.nlrb.gov/",
               "https://a.b.nlrb.gov/", "http://bücher.example/"):  # fmt: skip
        check_url(ok, policy)
    for refused in ("http://nlrb.gov/", "http://evilnlrb.gov/", "http://a.nlrb.gov.evil.com/",
                    "http://other.example.org/", "http://feeds.example.org.evil.com/",
                    "http://9.9.9.9/"):  # fmt: skip
        with pytest.raises(EgressRefused, match="is not one of the hosts this bot may fetch"):
            check_url(refused, policy)


def test_the_allow_list_does_not_let_private_addresses_through() -> None:
    with pytest.raises(EgressRefused, match="loopback"):
        check_url("http://127.0.0.1/", EgressPolicy(allowed_hosts=("127.0.0.1",)))


def test_ports() -> None:
    only_tls = EgressPolicy(ports=frozenset({443}))
    check_url("https://feeds.example.org/", only_tls)
    with pytest.raises(
        EgressRefused, match=r"^port 80 is not allowed for sources \(allowed: 443\)$"
    ):
        check_url("http://feeds.example.org/", only_tls)
    check_url("http://feeds.example.org:8080/", CHAT)  # any port by default
    with pytest.raises(EgressRefused, match=r"^port 0 is not allowed"):
        check_url("http://feeds.example.org:0/", CHAT)


@pytest.mark.parametrize(
    "settings",
    [{"schemes": frozenset({"ftp"})}, {"schemes": frozenset()}, {"max_redirects": -1},
     {"ports": frozenset({0})}, {"allowed_hosts": ("bad host",)}, {"allowed_hosts": ("*.",)}],
)  # fmt: skip
def test_a_wrong_policy_is_a_config_error(settings: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        EgressPolicy(**settings)  # type: ignore[arg-type]


HOSTILE = [
    "http://admin:hunter2@127.0.0.1/feed?token=s3cr3t#frag",
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/s3cr3t",
    "gopher://hunter2@feeds.example.org/_s3cr3t",
    "http://feeds.example.org:99999/s3cr3t",
    "http://[::1/s3cr3t",
    "http://feeds.example.org/s3cr3t\n@everyone",
    "http://<b>hunter2</b>.example.org/",
    "http://" + "a" * 3000 + ".example.org/",
]


@pytest.mark.parametrize("url", HOSTILE)
def test_messages_are_one_line_and_keep_secrets(url: str) -> None:
    with pytest.raises(EgressRefused) as caught:
        check_url(url, CHAT)
    message = str(caught.value)
    assert "\n" not in message
    assert len(message) < 160
    assert "hunter2" not in message
    assert "s3cr3t" not in message
    assert "@" not in message
    assert isinstance(caught.value, PermanentSourceError)


# --- properties ------------------------------------------------------------------------------

REFUSED_V4 = [
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
    "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
]  # fmt: skip


@st.composite
def refused_v4(draw: st.DrawFn) -> ipaddress.IPv4Address:
    net = ipaddress.IPv4Network(draw(st.sampled_from(REFUSED_V4)))
    offset = draw(st.integers(0, net.num_addresses - 1))
    return net.network_address + offset


def spellings(ip: ipaddress.IPv4Address, data: st.DataObject) -> str:
    """``ip`` written any way a URL parser or libc might read as that address."""
    n = int(ip)
    octets = list(ip.packed)
    forms = [
        str(ip), str(n), hex(n), "0" + oct(n)[2:], ".".join(f"0{o:o}" for o in octets),
        ".".join(hex(o) for o in octets), f"{octets[0]}.{n & 0xFFFFFF}",
        f"{octets[0]}.{octets[1]}.{n & 0xFFFF}", f"[::ffff:{ip}]", f"[::{ip}]",
        f"[64:ff9b::{ip}]", f"[{ipaddress.IPv6Address((0x2002 << 112) | (n << 80))}]",
        f"[{ipaddress.IPv6Address((0xFFFF << 32) | n)}]", f"{ip}.",
    ]  # fmt: skip
    host = data.draw(st.sampled_from(forms))
    return host.upper() if data.draw(st.booleans()) else host


@given(data=st.data())
def test_no_spelling_of_a_refused_address_passes(data: st.DataObject) -> None:
    ip = data.draw(refused_v4())
    host = spellings(ip, data)
    port = data.draw(st.sampled_from(["", ":80", ":8080"]))
    scheme = data.draw(st.sampled_from(["http", "https", "HTTP"]))
    with pytest.raises(EgressRefused):
        check_url(f"{scheme}://{host}{port}/feed", CHAT)


@given(host=st.text("0123456789abcdefxX.", min_size=1, max_size=24))
def test_anything_libc_reads_as_a_refused_address_is_refused(host: str) -> None:
    try:
        as_libc = ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return  # not an IPv4 address to libc: the resolver checks what the name resolves to
    try:
        url = check_url(f"http://{host}/", CHAT)
    except EgressRefused:
        return
    assert address_refusal(as_libc) is None, f"{host!r} passed but libc reads {as_libc}"
    assert url.raw_host == str(as_libc)


@given(n=st.integers(0, 2**32 - 1))
def test_ipv6_forms_are_judged_by_the_ipv4_address_they_carry(n: int) -> None:
    v4 = ipaddress.IPv4Address(n)
    expected = address_refusal(v4) is None
    for form in ((0xFFFF << 32) | n, (0x64FF9B << 96) | n, (0x2002 << 112) | (n << 80)):
        assert (address_refusal(ipaddress.IPv6Address(form)) is None) == expected


def test_doctests() -> None:
    result = doctest.testmod(egress)
    assert result.attempted > 0
    assert result.failed == 0
