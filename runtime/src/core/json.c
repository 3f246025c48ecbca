#include "json.h"

/* Bytes of the UTF-8 sequence starting at s (n left), 0 when it is not a valid one (overlong,
 * surrogate, above U+10FFFF, cut short). */
static size_t utf8_sequence(const unsigned char *s, size_t n)
{
    const unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else return 0;
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return len;
}

size_t ml_json_escape_next(const unsigned char *s, size_t n, char *out, size_t *len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char c = s[0];
    if (c == '"' || c == '\\') {
        out[0] = '\\', out[1] = (char)c, *len = 2;
        return 1;
    }
    if (c == '\n' || c == '\t' || c == '\r') {
        out[0] = '\\', out[1] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r', *len = 2;
        return 1;
    }
    if (c >= 0x20 && c < 0x7F) {
        out[0] = (char)c, *len = 1;
        return 1;
    }
    const size_t seq = c >= 0x80 ? utf8_sequence(s, n) : 0;
    if (seq > 0) {
        for (size_t i = 0; i < seq; i++) out[i] = (char)s[i];
        *len = seq;
        return seq;
    }
    /* a control character (\u00XX), or a byte that is not UTF-8 (\udcXX) */
    const char *lead = c < 0x80 ? "\\u00" : "\\udc";
    for (int i = 0; i < 4; i++) out[i] = lead[i];
    out[4] = hex[c >> 4], out[5] = hex[c & 15], *len = 6;
    return 1;
}

void ml_json_strn(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)s;
    size_t left = 0;
    while (left < n && p[left]) left++;
    while (left > 0) {
        char out[16];
        size_t len;
        const size_t used = ml_json_escape_next(p, left, out, &len);
        fwrite(out, 1, len, f);
        p += used;
        left -= used;
    }
    fputc('"', f);
}

void ml_json_str(FILE *f, const char *s)
{
    ml_json_strn(f, s, (size_t)-1);
}

/* Seconds with nanosecond resolution, printed exactly from the integer count. */
void ml_json_seconds(FILE *f, uint64_t ns)
{
    if (ns % 1000000000u == 0)
        fprintf(f, "%llu", (unsigned long long)(ns / 1000000000u));
    else {
        char frac[16];
        snprintf(frac, sizeof frac, "%09llu", (unsigned long long)(ns % 1000000000u));
        int end = 8;
        while (end > 0 && frac[end] == '0') end--;
        frac[end + 1] = 0;
        fprintf(f, "%llu.%s", (unsigned long long)(ns / 1000000000u), frac);
    }
}
