#include "json.h"

void ml_json_strn(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n && s[i]; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
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
