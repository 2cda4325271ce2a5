/** Exits through System.exit with a status that depends on the clock. */
public class Exit {
    public static void main(String[] args) {
        long v = System.nanoTime();
        System.out.println("nano " + v);
        System.exit((int) (Math.abs(v) % 50) + 1);
    }
}
