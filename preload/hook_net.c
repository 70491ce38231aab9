/* SPDX-License-Identifier: Apache-2.0 */
/* The network: socket, connect, bind and name lookup (getaddrinfo,
 * gethostbyname, gethostbyname2, gethostbyname_r) and reverse lookup
 * (gethostbyaddr, gethostbyaddr_r, getnameinfo). Inside a run anything but
 * AF_UNIX is refused with EACCES and recorded; name lookups pass for
 * numeric addresses, a NULL host and "localhost", which need no resolver,
 * and are refused for every other name; a reverse lookup passes only when
 * it asks for the numeric form (NI_NUMERICHOST) or no host at all. I/O on
 * sockets made before the run is hook_sockio.c's. Outside a run all of it is libc's,
 * and this file never opens, reads or resolves anything itself. */
#include <arpa/inet.h>
#include <netdb.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "hook_net.h"
#include "internal.h"

/* Deny by default: AF_UNIX is local and ordered by us; every other family
 * (AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_ALG, ...) reaches
 * something outside the simulation. */
int askew__sim_family_refused(int family)
{
    return family != AF_UNIX;
}

ASKEW_EXPORT int socket(int domain, int type, int protocol)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL) || !askew__sim_family_refused(domain)) {
        int (*real)(int, int, int) = REAL(socket);
        if (ASKEW_LIKELY(real != NULL))
            return real(domain, type, protocol);
        return (int)askew__raw_syscall(SYS_socket, domain, type, protocol, 0, 0, 0);
    }
    return ASKEW_REFUSE(h, ASKEW_VIOLATION_SOCKET, "socket", domain, type, EACCES);
}

static int addr_refused(const struct sockaddr *addr, socklen_t len)
{
    if (addr == NULL || len < (socklen_t)sizeof(sa_family_t))
        return 1;
    return askew__sim_family_refused(addr->sa_family);
}

ASKEW_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL) || !addr_refused(addr, len)) {
        int (*real)(int, const struct sockaddr *, socklen_t) = REAL(connect);
        if (ASKEW_LIKELY(real != NULL))
            return real(fd, addr, len);
        return (int)askew__raw_syscall(SYS_connect, fd, (long)addr, len, 0, 0, 0);
    }
    return ASKEW_REFUSE(h, ASKEW_VIOLATION_SOCKET, "connect", fd,
                        addr != NULL ? addr->sa_family : -1, EACCES);
}

ASKEW_EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL) || !addr_refused(addr, len)) {
        int (*real)(int, const struct sockaddr *, socklen_t) = REAL(bind);
        if (ASKEW_LIKELY(real != NULL))
            return real(fd, addr, len);
        return (int)askew__raw_syscall(SYS_bind, fd, (long)addr, len, 0, 0, 0);
    }
    return ASKEW_REFUSE(h, ASKEW_VIOLATION_SOCKET, "bind", fd,
                        addr != NULL ? addr->sa_family : -1, EACCES);
}

/* A name that resolves without asking anyone: NULL (the wildcard or
 * loopback address), an IPv4 or IPv6 literal, or localhost, which
 * /etc/hosts and RFC 6761 both pin to the loopback address. */
static int name_is_local(const char *name)
{
    if (name == NULL)
        return 1;
    unsigned char buf[sizeof(struct in6_addr)];
    if (inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1)
        return 1;
    return strcasecmp(name, "localhost") == 0 || strcasecmp(name, "localhost.") == 0;
}

ASKEW_EXPORT int getaddrinfo(const char *restrict node, const char *restrict service,
                             const struct addrinfo *restrict hints,
                             struct addrinfo **restrict res)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL) || name_is_local(node)) {
        __typeof__(&getaddrinfo) real = REAL(getaddrinfo);
        if (ASKEW_LIKELY(real != NULL))
            return real(node, service, hints, res);
        return EAI_AGAIN;
    }
    /* EAI_SYSTEM with errno: CPython turns it into PermissionError, the
     * same error a refused socket gives. */
    (void)ASKEW_REFUSE(h, ASKEW_VIOLATION_DNS, "getaddrinfo", 0, 0, EACCES);
    return EAI_SYSTEM;
}

ASKEW_EXPORT struct hostent *gethostbyname(const char *name)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL) || name_is_local(name)) {
        struct hostent *(*real)(const char *) = REAL(gethostbyname);
        if (ASKEW_LIKELY(real != NULL))
            return real(name);
        h_errno = TRY_AGAIN;
        return NULL;
    }
    ASKEW_RECORD(h, ASKEW_VIOLATION_DNS, "gethostbyname", 0, 0);
    h_errno = NO_RECOVERY;
    return NULL;
}

ASKEW_EXPORT struct hostent *gethostbyname2(const char *name, int af)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL) || name_is_local(name)) {
        struct hostent *(*real)(const char *, int) = REAL(gethostbyname2);
        if (ASKEW_LIKELY(real != NULL))
            return real(name, af);
        h_errno = TRY_AGAIN;
        return NULL;
    }
    ASKEW_RECORD(h, ASKEW_VIOLATION_DNS, "gethostbyname2", af, 0);
    h_errno = NO_RECOVERY;
    return NULL;
}

ASKEW_EXPORT int gethostbyname_r(const char *restrict name,
                                 struct hostent *restrict ret, char *restrict buf,
                                 size_t buflen, struct hostent **restrict result,
                                 int *restrict h_errnop)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL) || name_is_local(name)) {
        __typeof__(&gethostbyname_r) real = REAL(gethostbyname_r);
        if (ASKEW_LIKELY(real != NULL))
            return real(name, ret, buf, buflen, result, h_errnop);
        return EAGAIN;
    }
    ASKEW_RECORD(h, ASKEW_VIOLATION_DNS, "gethostbyname_r", 0, 0);
    if (result != NULL)
        *result = NULL;
    if (h_errnop != NULL)
        *h_errnop = NO_RECOVERY;
    return EACCES;
}

/* Reverse lookups: the answer for an address comes from /etc/hosts or a
 * DNS server, both outside the run (socket.getfqdn(ip) and
 * socket.gethostbyaddr reach these). Even loopback is refused: many hosts
 * map 127.0.1.1 to their own name. */
ASKEW_EXPORT struct hostent *gethostbyaddr(const void *addr, socklen_t len, int type)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        struct hostent *(*real)(const void *, socklen_t, int) = REAL(gethostbyaddr);
        if (ASKEW_LIKELY(real != NULL))
            return real(addr, len, type);
        h_errno = TRY_AGAIN;
        return NULL;
    }
    ASKEW_RECORD(h, ASKEW_VIOLATION_DNS, "gethostbyaddr", type, 0);
    h_errno = NO_RECOVERY;
    return NULL;
}

ASKEW_EXPORT int gethostbyaddr_r(const void *restrict addr, socklen_t len, int type,
                                 struct hostent *restrict ret, char *restrict buf,
                                 size_t buflen, struct hostent **restrict result,
                                 int *restrict h_errnop)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        __typeof__(&gethostbyaddr_r) real = REAL(gethostbyaddr_r);
        if (ASKEW_LIKELY(real != NULL))
            return real(addr, len, type, ret, buf, buflen, result, h_errnop);
        return EAGAIN;
    }
    ASKEW_RECORD(h, ASKEW_VIOLATION_DNS, "gethostbyaddr_r", type, 0);
    if (result != NULL)
        *result = NULL;
    if (h_errnop != NULL)
        *h_errnop = NO_RECOVERY;
    return EACCES;
}

/* getnameinfo needs nobody when the host is not asked for, is asked for in
 * numeric form, or the address is AF_UNIX (its "name" is its path). A
 * service name comes from /etc/services without a resolver and passes. */
static int nameinfo_is_local(const struct sockaddr *sa, socklen_t salen, char *host,
                             socklen_t hostlen, int flags)
{
    if (host == NULL || hostlen == 0 || (flags & NI_NUMERICHOST) != 0)
        return 1;
    return sa != NULL && salen >= (socklen_t)sizeof(sa_family_t) &&
           sa->sa_family == AF_UNIX;
}

ASKEW_EXPORT int getnameinfo(const struct sockaddr *restrict sa, socklen_t salen,
                             char *restrict host, socklen_t hostlen,
                             char *restrict serv, socklen_t servlen, int flags)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL) || nameinfo_is_local(sa, salen, host, hostlen, flags)) {
        __typeof__(&getnameinfo) real = REAL(getnameinfo);
        if (ASKEW_LIKELY(real != NULL))
            return real(sa, salen, host, hostlen, serv, servlen, flags);
        return EAI_AGAIN;
    }
    /* EAI_SYSTEM: CPython raises PermissionError */
    (void)ASKEW_REFUSE(h, ASKEW_VIOLATION_DNS, "getnameinfo", flags, 0, EACCES);
    return EAI_SYSTEM;
}
