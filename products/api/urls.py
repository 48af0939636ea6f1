from api.routers import ApiRouter
from products.api.views import ProductViewSet

router = ApiRouter()
router.register("products", ProductViewSet, basename="products")

urlpatterns = router.urls
