import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;

/**
 * Reads the clocks the way script engines do: through reflection (rhino, bsh, jython) and
 * method handles (invokedynamic-based languages), with no call site naming System's methods.
 * Forty reflective calls cross JDK 17's switch from the native accessor to generated code.
 */
public class ReflectClock {
    public static void main(String[] args) throws Throwable {
        Method millis = System.class.getMethod("currentTimeMillis");
        Method nanos = System.class.getMethod("nanoTime");
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < 40; i++) {
            out.append(millis.invoke(null)).append(' ').append(nanos.invoke(null)).append('\n');
        }
        MethodHandle found = MethodHandles.lookup()
                .findStatic(System.class, "nanoTime", MethodType.methodType(long.class));
        MethodHandle unreflected = MethodHandles.publicLookup().unreflect(millis);
        for (int i = 0; i < 3; i++) {
            long a = (long) found.invokeExact();
            long b = (long) unreflected.invokeExact();
            out.append(a).append(' ').append(b).append('\n');
        }
        System.out.print(out);
    }
}
