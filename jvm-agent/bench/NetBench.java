import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;

/**
 * Small HTTP requests over loopback with HttpURLConnection (keep-alive): `NetBench URL OPS`
 * prints "request <ns>", the median wall time per request over 7 rounds of OPS requests
 * (after one warm-up round).
 */
public class NetBench {
    public static void main(String[] args) throws Exception {
        URL url = URI.create(args[0]).toURL();
        int ops = Integer.parseInt(args[1]);
        long[] rounds = new long[7];
        long bytes = 0;
        for (int r = -1; r < rounds.length; r++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < ops; i++) {
                HttpURLConnection c = (HttpURLConnection) url.openConnection();
                bytes += c.getInputStream().readAllBytes().length;
            }
            long t = System.nanoTime() - t0;
            if (r >= 0) {
                rounds[r] = t / ops;
            }
        }
        java.util.Arrays.sort(rounds);
        System.out.println("request " + rounds[rounds.length / 2]);
        if (bytes == 0) {
            System.out.println("no bytes");
        }
    }
}
