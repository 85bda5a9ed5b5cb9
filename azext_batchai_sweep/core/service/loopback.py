"""Whether a host name is this machine: plain http and an unauthenticated bind are only acceptable there."""
import ipaddress


def is_loopback(host):
    """True for `localhost` and any loopback address (127.0.0.0/8, ::1); False for names and other addresses."""
    if host == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
