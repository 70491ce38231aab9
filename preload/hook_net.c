/* SPDX-License-Identifier: Apache-2.0 */
/* The network: socket, connect, bind, name lookup (getaddrinfo,
 * gethostbyname, gethostbyname2, gethostbyname_r), reverse lookup
 * (gethostbyaddr, gethostbyaddr_r, getnameinfo), and glibc's resolver
 * entry points that query a DNS server themselves (res_query, res_search,
 * res_querydomain, res_send and their res_n and __res_ forms) or start a
 * thread to do it (getaddrinfo_a). Inside a run anything but AF_UNIX is
 * refused with EACCES and recorded, and so is a connect to an AF_UNIX
 * address the run did not bind (a server started before the run: libpq's
 * default, a local daemon), whose replies would carry real time; name
 * lookups pass for numeric addresses, a NULL host and "localhost", which
 * need no resolver, and are refused for every other name; a reverse lookup
 * passes only when it asks for the numeric form (NI_NUMERICHOST) or no
 * host at all; the resolver calls are always refused. I/O on sockets made
 * before the run is hook_sockio.c's. Outside a run all of it is libc's, and
 * this file never opens, reads or resolves anything itself. */
#include <arpa/inet.h>
#include <resolv.h>
#include <netdb.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "hook_fds.h"
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

/* A connect leaves the run unless it goes to an AF_UNIX address the run
 * bound itself (a bind is only refused for a refused family). */
static int addr_refused(const struct sockaddr *addr, socklen_t len, int connecting)
{
    if (addr == NULL || len < (socklen_t)sizeof(sa_family_t))
        return 1;
    if (askew__sim_family_refused(addr->sa_family))
        return 1;
    return connecting && !askew__sim_unix_ours(addr, len);
}

int askew__sim_connect_refused(const struct sockaddr *addr, socklen_t len)
{
    return addr_refused(addr, len, /* connecting */ 1);
}

ASKEW_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL) || !addr_refused(addr, len, /* connecting */ 1)) {
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
    if (ASKEW_LIKELY(h == NULL) || !addr_refused(addr, len, /* connecting */ 0)) {
        int (*real)(int, const struct sockaddr *, socklen_t) = REAL(bind);
        int rc = ASKEW_LIKELY(real != NULL)
                     ? real(fd, addr, len)
                     : (int)askew__raw_syscall(SYS_bind, fd, (long)addr, len, 0, 0, 0);
        if (ASKEW_UNLIKELY(h != NULL) && rc == 0)
            askew__sim_unix_bound(addr, len); /* a connect to it stays inside */
        return rc;
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

/* glibc's resolver, which sends DNS queries itself: refused inside a run
 * (-1 with h_errno NO_RECOVERY, errno EACCES). resolv.h of older glibc
 * names them __res_*; the res_n* forms take a resolver state. */
#define RES_REFUSED(h, call)                                                           \
    do {                                                                               \
        (void)ASKEW_REFUSE((h), ASKEW_VIOLATION_DNS, (call), 0, 0, EACCES);            \
        h_errno = NO_RECOVERY;                                                         \
        return -1;                                                                     \
    } while (0)

#define RES_QUERY(name, real_name, params, args)                                       \
    ASKEW_EXPORT int name params                                                       \
    {                                                                                  \
        const struct askew_preload_hooks *h = askew__t_hooks;                          \
        if (ASKEW_UNLIKELY(h != NULL))                                                 \
            RES_REFUSED(h, #name);                                                     \
        __typeof__(&real_name) real = REAL(real_name);                                 \
        if (ASKEW_LIKELY(real != NULL))                                                \
            return real args;                                                          \
        h_errno = TRY_AGAIN;                                                           \
        return -1;                                                                     \
    }

typedef struct __res_state *askew_res_state;
/* The names resolv.h gave these before glibc 2.34: compat aliases of the
 * same functions, so they forward to the current names. */
int __res_query(const char *, int, int, unsigned char *, int);
int __res_search(const char *, int, int, unsigned char *, int);
int __res_send(const unsigned char *, int, unsigned char *, int);

RES_QUERY(res_query, res_query, (const char *d, int c, int t, unsigned char *a, int l),
          (d, c, t, a, l))
RES_QUERY(res_search, res_search,
          (const char *d, int c, int t, unsigned char *a, int l), (d, c, t, a, l))
RES_QUERY(res_querydomain, res_querydomain,
          (const char *n, const char *d, int c, int t, unsigned char *a, int l),
          (n, d, c, t, a, l))
RES_QUERY(res_send, res_send, (const unsigned char *m, int ml, unsigned char *a, int l),
          (m, ml, a, l))
RES_QUERY(res_nquery, res_nquery,
          (askew_res_state s, const char *d, int c, int t, unsigned char *a, int l),
          (s, d, c, t, a, l))
RES_QUERY(res_nsearch, res_nsearch,
          (askew_res_state s, const char *d, int c, int t, unsigned char *a, int l),
          (s, d, c, t, a, l))
RES_QUERY(res_nquerydomain, res_nquerydomain,
          (askew_res_state s, const char *n, const char *d, int c, int t,
           unsigned char *a, int l),
          (s, n, d, c, t, a, l))
RES_QUERY(res_nsend, res_nsend,
          (askew_res_state s, const unsigned char *m, int ml, unsigned char *a, int l),
          (s, m, ml, a, l))
RES_QUERY(__res_query, res_query,
          (const char *d, int c, int t, unsigned char *a, int l), (d, c, t, a, l))
RES_QUERY(__res_search, res_search,
          (const char *d, int c, int t, unsigned char *a, int l), (d, c, t, a, l))
RES_QUERY(__res_send, res_send,
          (const unsigned char *m, int ml, unsigned char *a, int l), (m, ml, a, l))

/* getaddrinfo_a resolves in threads glibc starts itself, with no
 * pthread_create of ours to see: refused inside a run, EAI_SYSTEM with
 * EACCES as getaddrinfo's refusal. */
struct gaicb;
int getaddrinfo_a(int mode, struct gaicb *list[], int nitems, struct sigevent *sevp);

ASKEW_EXPORT int getaddrinfo_a(int mode, struct gaicb *list[], int nitems,
                               struct sigevent *sevp)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        __typeof__(&getaddrinfo_a) real = REAL(getaddrinfo_a);
        if (ASKEW_LIKELY(real != NULL))
            return real(mode, list, nitems, sevp);
        return EAI_AGAIN;
    }
    (void)ASKEW_REFUSE(h, ASKEW_VIOLATION_DNS, "getaddrinfo_a", mode, nitems, EACCES);
    return EAI_SYSTEM;
}
