/* The JNI side of tests/java/NativeRead.java: reads a file with stdio, out of the JDK's sight. */
#include <jni.h>
#include <stdio.h>

JNIEXPORT jstring JNICALL Java_NativeRead_read(JNIEnv *env, jclass cls, jstring path) {
    (void)cls;
    const char *p = (*env)->GetStringUTFChars(env, path, NULL);
    char buf[256] = {0};
    FILE *f = fopen(p, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        fclose(f);
    }
    (*env)->ReleaseStringUTFChars(env, path, p);
    return (*env)->NewStringUTF(env, buf);
}
